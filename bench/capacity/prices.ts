/**
 * The one price table the capacity model prices with: AWS list prices, us-east-1 (N. Virginia), on-demand,
 * first tier, no free tier (at 10 M results a day every free tier is a rounding error), in USD per unit.
 * Checked on the date below; check the pages again before relying on a figure.
 */
export const prices = {
  region: 'us-east-1',
  checkedOn: '2026-12-01',
  dynamodb: {
    // On-demand, Standard table class: $0.625 per million write request units, $0.125 per million read
    // request units (after the November 2024 reduction). https://aws.amazon.com/dynamodb/pricing/on-demand/
    writeRequestUnit: 0.625 / 1e6,
    readRequestUnit: 0.125 / 1e6,
    // Storage, per GB-month, and continuous backups (point-in-time recovery, on for every table in
    // lib/constructs/table.ts), per GB-month of table size. Same page.
    storageGbMonth: 0.25,
    pitrGbMonth: 0.2,
  },
  sqs: {
    // Standard queue: $0.40 per million requests (first 100 billion a month); every 64 KB chunk of a
    // payload is one request. https://aws.amazon.com/sqs/pricing/
    request: 0.4 / 1e6,
    chunkBytes: 64 * 1024,
  },
  scheduler: {
    // EventBridge Scheduler: $1.00 per million scheduled invocations (after 14 million free a month);
    // creating a schedule is not billed (the price list has no SKU for it).
    // https://aws.amazon.com/eventbridge/pricing/ (Scheduler)
    invocation: 1.0 / 1e6,
    createSchedule: 0,
  },
  lambda: {
    // Arm (Graviton): $0.0000133334 per GB-second (first 7.5 billion GB-s a month), $0.20 per million
    // requests; duration billed per 1 ms. https://aws.amazon.com/lambda/pricing/
    request: 0.2 / 1e6,
    gbSecondArm64: 0.0000133334,
  },
  apiGateway: {
    // HTTP APIs: $1.00 per million requests (first 300 million a month), metered in 512 KB increments.
    // https://aws.amazon.com/api-gateway/pricing/
    httpRequest: 1.0 / 1e6,
    chunkBytes: 512 * 1024,
  },
  kms: {
    // Symmetric-key requests (Encrypt, Decrypt): $0.03 per 10,000; each customer-managed key $1.00 a month.
    // https://aws.amazon.com/kms/pricing/ (the same figures in AWS's own KMS pricing example).
    request: 0.03 / 10_000,
    keyMonth: 1.0,
  },
  secretsManager: {
    // $0.40 per secret a month, $0.05 per 10,000 API calls. https://aws.amazon.com/secrets-manager/pricing/
    secretMonth: 0.4,
    request: 0.05 / 10_000,
  },
  xray: {
    // $5.00 per million traces recorded, $0.50 per million traces retrieved or scanned.
    // https://aws.amazon.com/xray/pricing/
    traceRecorded: 5.0 / 1e6,
    traceScanned: 0.5 / 1e6,
  },
  cloudwatch: {
    // Logs: $0.50 per GB ingested (Lambda's logs are vended logs, $0.50 a GB for the first 10 TB), $0.03 per
    // GB-month stored. Metrics: $0.30 per custom metric a month (first 10,000), $0.10 per standard-resolution
    // alarm metric a month, $3.00 per dashboard a month. https://aws.amazon.com/cloudwatch/pricing/
    logIngestedGb: 0.5,
    logStoredGbMonth: 0.03,
    customMetricMonth: 0.3,
    alarmMetricMonth: 0.1,
    dashboardMonth: 3.0,
  },
  dataTransfer: {
    // Out to the internet from us-east-1: $0.09 per GB (first 10 TB a month). https://aws.amazon.com/ec2/pricing/on-demand/ (Data Transfer)
    outGb: 0.09,
  },
  ses: {
    // Outbound email: $0.10 per 1,000 messages (attachments and dedicated IPs extra, unused here).
    // https://aws.amazon.com/ses/pricing/
    email: 0.1 / 1000,
  },
} as const;

export type Prices = typeof prices;
