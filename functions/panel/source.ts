import type { OpsApiClient } from '../cli/api-client.ts';

/**
 * Where the panel reads and acts: the ops API, and nothing else. The local runtime hands the panel a
 * client of its own API on 127.0.0.1; `npm run ops -- panel --api …` hands it a client of a deployed
 * stack's API that signs every request with SigV4 (functions/cli/api-client.ts). Either way the panel
 * reads no table and holds no credentials of its own: what the API refuses, the panel cannot do.
 */
export type PanelApi = Pick<
  OpsApiClient,
  | 'baseUrl'
  | 'now'
  | 'jobCounts'
  | 'jobBreakdown'
  | 'listJobs'
  | 'getJob'
  | 'retryJob'
  | 'retryJobs'
  | 'cancelJobs'
  | 'servedPolicies'
  | 'periodic'
  | 'listBatches'
  | 'getBatch'
  | 'pauseBatch'
  | 'resumeBatch'
  | 'batchRounds'
  | 'batchContacts'
  | 'exportRows'
  | 'exportPages'
  | 'contactAttempts'
  | 'listEndpoints'
  | 'getEndpoint'
  | 'endpointDeliveries'
  | 'endpointAttempts'
  | 'enableEndpoint'
  | 'redeliverEndpoint'
  | 'listMail'
  | 'rawMail'
  | 'listSuppressions'
  | 'putSuppression'
  | 'deleteSuppression'
>;
