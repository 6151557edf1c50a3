/** The exhaustive-switch guard: the compiler refuses a call whose value is not `never`; at run time it throws. */
export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}
