// The one shape registry credentials take inside the shim, whichever source gave them.
/** Registry credentials from a request, a credential provider or a Docker config file. */
export interface RegistryCredential {
  username?: string;
  password?: string;
  /** base64 "username:password". */
  auth?: string;
  identityToken?: string;
  registryToken?: string;
  serverAddress?: string;
}
