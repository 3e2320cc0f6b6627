// Package openapi turns a team's OpenAPI services into tools ("custom integrations"): the model
// resolves a service from its OpenAPI 3.0/3.1 or Swagger 2 document (a URL, or a file in the team's
// workspace) with lucy_resolve_custom_integration, and its operations become the tools
// lucy_custom_{service}_{operation}, offered by the Source to the later runs of the person who connected
// it, or of everyone in the team when an admin shared it.
//
// Connecting asks the person first (resolve.go): the prompt shows the API's address, the key it uses and
// where that key is bound, whose runs get the tools and which operations run without asking (GET and
// HEAD, and others only when the person marked them safe). The approved call writes the service only
// if it is still what the prompt showed (its Guard).
//
// Reading a document (index.go): a JSON document is streamed and indexed, keeping of its paths only
// the chosen ones (the operations named, or all while the API is small enough), the components, the
// security schemes and the top-level members a document needs; the document of the chosen operations
// and the components they reach is then loaded and validated path by path (spec.go, buildDoc), so a
// path that is not valid OpenAPI is left out with the reason rather than refusing the document. YAML
// is read whole and converted to JSON first. LUCY_OPENAPI_MAX_DOCUMENT_MB caps what is read.
//
// What a resolved service is lives in Lucy's state store (Deps.State, shared by every worker), one
// object per service, openapi/<service>.json: the operations chosen, their tools' schemas, the base
// URL, the auth scheme, who added it, and the OpenAPI document pruned to those operations, so that any
// worker rebuilds the tools and validates calls without fetching the document again. Writes are
// conditional (workspace.Cond), so two workers resolving at once lose nothing.
//
// Calls: the model's arguments become an HTTP request that is validated against the document
// (openapi3filter) before anything is sent; the stored key the service names (package secrets, read
// only inside the call, and sent only if it is bound to the API's origin and usable by the run's
// requester: secrets.Applies, and only to an operation whose security accepts its scheme: keyFits) is
// applied as the document's security scheme says (API key in a header, query or
// cookie, HTTP bearer, HTTP basic, OAuth2 client credentials), or, for operations whose document
// declares no security, as the person said at resolve (auth, bearer by default: givenAuth); the
// response is validated too (a
// mismatch is reported, not fatal) and returned as text with the credential scrubbed out, fenced as
// data (tools.UntrustedResult).
//
// Egress: the document's URL, the API and the token endpoint are reached only at public addresses
// (tools.PrivateHosts.CheckURL and the guarded client of tools.NewGuardedClient) unless the operator
// allows the host (LUCY_ALLOWED_PRIVATE_HOSTS, Deps.Hosts).
package openapi
