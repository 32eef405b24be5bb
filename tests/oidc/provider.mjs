// A real OpenID provider for the tests: node-oidc-provider (OpenID
// Certified), installed by scripts/test-oidc.sh, configured from the JSON
// file named on the command line (tests/oidc_harness.py writes it):
//   module: the provider's entry point; issuer, port; keys: the signing
//   keys (private JWKs; the first of an algorithm signs); client_id and
//   redirect_uris of the calendar page (a public client: PKCE, no secret);
//   resource: the API's audience; origins: allowed to call the token
//   endpoint (CORS); ttl: access tokens' life in seconds; alg: their
//   signing algorithm. Access tokens are JWTs naming the login as
//   preferred_username; the development login form takes any name.
import fs from 'node:fs';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const { default: Provider } = await import(config.module);

const provider = new Provider(config.issuer, {
  clients: [{
    client_id: config.client_id,
    token_endpoint_auth_method: 'none',
    redirect_uris: config.redirect_uris,
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  jwks: { keys: config.keys },
  cookies: { keys: ['plus-test-cookie-key'] },
  ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: config.ttl,
         AuthorizationCode: 60, IdToken: 600 },
  pkce: { required: () => true },
  clientBasedCORS: (ctx, origin) => config.origins.includes(origin),
  findAccount: async (ctx, id) => ({
    accountId: id,
    claims: async () => ({ sub: id, preferred_username: id }),
  }),
  extraTokenClaims: async (ctx, token) => ({ preferred_username: token.accountId }),
  features: {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => config.resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => ({
        scope: 'openid',
        audience: indicator,
        accessTokenTTL: config.ttl,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: config.alg } },
      }),
    },
  },
});
provider.on('server_error', (ctx, error) => console.error('server_error', error));
provider.listen(config.port, '127.0.0.1', () => console.log(`listening ${config.issuer}`));
