import { describe, expect, it } from 'vitest';
import { parseMailConfig } from '../../functions/mail/config.ts';
import { linkPaths } from '../../functions/mail/links.ts';
import { PUBLIC_ROUTES } from '../../lib/redial-stack.ts';
import type { RedialMailProps } from '../../lib/redial-stack.ts';
import { synth as synthStack } from './synth.ts';
import type { Statement } from './synth.ts';

function synth(props: { mail: RedialMailProps }) {
  const s = synthStack(props);
  const functions = s.ofType('AWS::Lambda::Function');
  return { stack: s.stack, resources: s.resources, idOf: s.idOf, statementsOfRole: s.roleStatements, functions, roleOf: s.roleOf };
}

const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const sesStatements = (statements: Statement[]) => statements.filter((s) => actionsOf(s).some((a) => a.startsWith('ses:')));
const identityArn = (name: string) => ({
  'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':ses:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:identity/${name}`]],
});

describe('mail on AWS', () => {
  it('LetsOnlyTheMailWorkerSendAndOnlyAsTheConfiguredSesIdentity', () => {
    const { stack, resources, idOf, statementsOfRole, functions, roleOf } = synth({ mail: { domain: 'mail.acme.test', sesIdentity: 'acme.test' } });
    const mailWorkerId = idOf(stack.jobQueues.mail.worker);
    expect(resources[mailWorkerId]?.Type).toBe('AWS::Lambda::Function');
    for (const [id, fn] of functions) {
      const ses = sesStatements(statementsOfRole(roleOf(fn)));
      if (id === mailWorkerId) expect(ses).toEqual([{ Effect: 'Allow', Action: 'ses:SendEmail', Resource: identityArn('acme.test') }]);
      else expect(ses, id).toEqual([]);
    }
  });

  it('AddsTheConfigurationSetToTheSendersResourcesWhenOneIsConfigured', () => {
    const { stack, idOf, statementsOfRole } = synth({ mail: { domain: 'acme.test', configurationSet: 'redial-mail' } });
    const ses = sesStatements(statementsOfRole(idOf(stack.jobQueues.mail.worker.role!)));
    const resourcesAllowed = ses.flatMap((s) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource])).map((r) => JSON.stringify(r));
    expect(resourcesAllowed.sort()).toEqual(
      [
        JSON.stringify(identityArn('acme.test')),
        JSON.stringify({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':ses:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':configuration-set/redial-mail']] }),
      ].sort(),
    );
  });

  it('GivesEveryFunctionAMailConfigurationItsColdStartAccepts', () => {
    const { functions, stack, idOf } = synth({ mail: { domain: 'acme.test', from: 'Acme <robot@acme.test>' } });
    expect(functions.length).toBeGreaterThan(0);
    for (const [id, fn] of functions) {
      const variables = (fn.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables;
      // PUBLIC_BASE_URL is the HTTP API's endpoint, a token until deploy: stand a URL in for it.
      expect(JSON.stringify(variables['PUBLIC_BASE_URL']), id).toContain(idOf(stack.api));
      const env = Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, typeof v === 'string' ? v : 'https://api.example.test']));
      expect(parseMailConfig(env), id).toEqual({
        domain: 'acme.test',
        from: 'Acme <robot@acme.test>',
        publicBaseUrl: 'https://api.example.test',
        transport: { type: 'ses', configurationSet: undefined },
      });
    }
  });

  it('UsesAConfiguredPublicBaseUrlForTheLinks', () => {
    const { functions } = synth({ mail: { domain: 'acme.test', publicBaseUrl: 'https://redial.acme.test' } });
    for (const [id, fn] of functions) {
      expect((fn.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables['PUBLIC_BASE_URL'], id).toBe('https://redial.acme.test');
    }
  });

  it('ServesTheMailLinksWithoutIamAndNothingElseOfMail', () => {
    const publicPaths = PUBLIC_ROUTES.map((r) => `${r.method} ${r.path}`);
    // Each link: GET shows its button (changes nothing), POST uses the token.
    for (const path of Object.values(linkPaths)) {
      expect(publicPaths).toContain(`GET ${path}`);
      expect(publicPaths).toContain(`POST ${path}`);
    }
    expect(publicPaths.filter((p) => p.includes('/v1/tenants/'))).toHaveLength(2 * Object.keys(linkPaths).length);
  });
});
