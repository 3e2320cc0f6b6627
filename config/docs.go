package config

import (
	"fmt"
	"slices"
	"strings"
)

// Doc is one row of the configuration table in docs/operating.md, which TestConfigurationTable
// compares with Table: the descriptions live here, beside the list Load reads, so that a variable
// added to Variables without a row fails that test (go test ./config -run TestConfigurationTable
// -update rewrites the table from these rows).
type Doc struct {
	// Names are the variables the row documents: each name in Variables is in exactly one row. A
	// name not in Variables is read by another package from the process environment (the OTEL_
	// variables, by package tracing and the OpenTelemetry SDK).
	Names []string
	// Label is the row's first cell when it is not Names in backticks (the per-tier rows, and the
	// Temporal TLS row, whose old names are documented in Meaning).
	Label string
	// Meaning and Default are Markdown, as the table shows them.
	Meaning, Default string
}

// Docs are the configuration table's rows, in the table's order.
var Docs = []Doc{
	{
		Names:   []string{"TEMPORAL_ADDRESS"},
		Meaning: "Temporal frontend",
		Default: "embedded in `lucy dev`; `127.0.0.1:7233` otherwise",
	},
	{
		Names:   []string{"TEMPORAL_NAMESPACE"},
		Meaning: "namespace",
		Default: "`default`",
	},
	{
		Names:   []string{"TEMPORAL_API_KEY", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS", "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY"},
		Label:   "`TEMPORAL_API_KEY`, `TEMPORAL_TLS_CLIENT_CERT_PATH`, `TEMPORAL_TLS_CLIENT_KEY_PATH`, `TEMPORAL_TLS_SERVER_CA_CERT_PATH`, `TEMPORAL_TLS_SERVER_NAME`, `TEMPORAL_TLS`",
		Meaning: "Temporal Cloud / mTLS: API key (turns TLS on), PEM client certificate and key, a private CA, the server certificate's name, TLS on or off. Temporal's standard client configuration (`contrib/envconfig`, as the `temporal` CLI). `TEMPORAL_TLS_CERT` / `TEMPORAL_TLS_KEY`, the old names, still work for one release and log a deprecation line",
		Default: "unset",
	},
	{
		Names:   []string{"TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE"},
		Meaning: "a profile of a `temporal.toml` (address, namespace, API key, TLS), with the variables above over it; `lucy dev` reads one only when one of these is set",
		Default: "`default`, `~/.config/temporalio/temporal.toml`",
	},
	{
		Names:   []string{"LUCY_DATA_DIR"},
		Meaning: "embedded server database, workspace files (`workspaces/<team>/`, which Lucy's file tools read and write) and knowledge notes loaded into every run's system prompt (`knowledge/<team>/*.md`, out of the tools' reach: only the operator writes them). Notes in the old place, `workspaces/<team>/knowledge/`, are no longer loaded; the worker logs a warning naming them: review them, then move the ones you trust",
		Default: "`.lucy`",
	},
	{
		Names:   []string{"LUCY_WORKSPACE_STORE"},
		Meaning: "where workspace files live: `local` (the folder `LUCY_DATA_DIR/workspaces/<team>/` of this machine) or `s3://bucket/prefix` (an S3-compatible bucket, keys `prefix/<team>/<path>`, shared by every worker; checked with one request at start). Use `local` for `lucy dev` and a single worker; use `s3://` as soon as two workers run (each worker's disk would otherwise hold different files). Knowledge notes (`knowledge/<team>/`) stay in `LUCY_DATA_DIR` either way",
		Default: "`local`",
	},
	{
		Names:   []string{"LUCY_S3_ENDPOINT"},
		Meaning: "the store's URL, for anything but AWS S3: `http://minio:9000` (MinIO), `https://<account>.r2.cloudflarestorage.com` (R2), `https://storage.googleapis.com` (GCS interoperability with HMAC keys)",
		Default: "AWS S3",
	},
	{
		Names:   []string{"LUCY_S3_REGION"},
		Meaning: "the bucket's region (`auto` for R2)",
		Default: "looked up",
	},
	{
		Names:   []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"},
		Meaning: "keys for `LUCY_WORKSPACE_STORE=s3://…` (set both or neither; the session token only with temporary keys). Without them, the machine's IAM role (instance metadata, web identity on EKS)",
		Default: "unset",
	},
	{
		Names:   []string{"LUCY_TEMPORAL_PORT", "LUCY_UI_PORT"},
		Meaning: "embedded server ports (`lucy dev`)",
		Default: "`7233`, `8233`",
	},
	{
		Names:   []string{"LUCY_HTTP_ADDR"},
		Meaning: "HTTP listener: `/slack/events`, `/slack/interactivity`, `/healthz`, `/readyz`, `/metrics` (the local workspace of `lucy dev` is not here: it listens on a free loopback port with a token made at each start, both written to `local-workspace.json` in `LUCY_DATA_DIR`, mode 0600, which `lucy chat` reads). `lucy dev` listens on loopback only by default, so that its `/metrics` and `/readyz` stay on your machine (a tunnel to the Events API connects to loopback too); set `:3000` to open it to your network",
		Default: "`:3000` (`lucy gateway`), `127.0.0.1:3000` (`lucy dev`)",
	},
	{
		Names:   []string{"LUCY_WORKER_HTTP_ADDR"},
		Meaning: "where `lucy worker` serves `/healthz` (200 while the process is up), `/readyz` (200 while the worker polls the task queue and Temporal answers, 503 before it started, after it stopped or failed) and `/metrics`. Every interface by default, like `lucy gateway`'s `LUCY_HTTP_ADDR`, because probes and Prometheus reach a pod on its own address. `lucy dev` does not use it: its one `LUCY_HTTP_ADDR` serves the whole process, and its `/readyz` includes the worker",
		Default: "`:9090`",
	},
	{
		Names:   []string{"SLACK_BOT_TOKEN"},
		Meaning: "bot token `xoxb-…`",
		Default: "unset",
	},
	{
		Names:   []string{"SLACK_APP_TOKEN"},
		Meaning: "app-level token `xapp-…` (Socket Mode)",
		Default: "unset",
	},
	{
		Names:   []string{"SLACK_SIGNING_SECRET"},
		Meaning: "signing secret (HTTP Events API)",
		Default: "unset",
	},
	{
		Names:   []string{"SLACK_API_URL"},
		Meaning: "Slack Web API base URL",
		Default: "`https://slack.com/api/`",
	},
	{
		Names:   []string{"LUCY_ADMIN_USERS"},
		Meaning: "comma-separated Slack user IDs that may approve anyone's destructive actions and make things the team's: connect an MCP server or API service for everyone, share a key (`lucy_share_api_key`), save a team skill; they may also change or remove what members set up (see [`docs/security.md`](security.md))",
		Default: "unset",
	},
	{
		Names:   []string{"LUCY_PUBLIC_URL"},
		Meaning: "the gateway's public base URL as a browser reaches it (https; http only on `localhost`, `127.0.0.1`, `[::1]`), e.g. `https://lucy.example.com`: signing in to an MCP server with OAuth sends the browser back to `<it>/mcp/oauth/callback`, which the gateway serves on `LUCY_HTTP_ADDR`. Set it for the workers (they put it in the redirect URI) and the gateway alike",
		Default: "unset: OAuth sign-in is not offered; stored tokens work (see \"Connect your tools\" in [using.md](using.md#connect-your-tools))",
	},
	{
		Names:   []string{"LUCY_SECRETS_KEY"},
		Meaning: "the key that encrypts the teams' stored credentials (AES-256-GCM; 32 bytes in base64 or 64 hex digits: `openssl rand -base64 32`), the same for every worker and gateway; changing it makes stored keys unreadable (see \"Keys\")",
		Default: "generated in `LUCY_DATA_DIR/secrets.key` by `lucy dev`; required by `lucy worker` and `lucy gateway`",
	},
	{
		Names:   []string{"LUCY_MCP_CONFIG"},
		Meaning: "the operator's MCP servers file (`{\"mcpServers\": {…}}`, see \"Connect your tools\" in [using.md](using.md#connect-your-tools)), for every team; when set, it must exist and be valid or the worker does not start",
		Default: "`LUCY_DATA_DIR/mcp.json` (missing: no servers)",
	},
	{
		Names:   []string{"LUCY_SERVICE_CATALOG"},
		Meaning: "the operator's service catalogue file (YAML or JSON, `services:` entries, see \"The service catalogue\" below): an entry replaces the built-in one of the same name or alias, any other is added; when set, it must exist and be valid or the worker does not start",
		Default: "the built-in catalogue",
	},
	{
		Names:   []string{"LUCY_APPROVAL_KEY"},
		Meaning: "shared secret (at least 32 characters, the same for worker and gateway) with which the gateway signs the messages and approval clicks it hands to Temporal and the worker checks them; an approval without a valid signature is refused and logged",
		Default: "derived from `SLACK_BOT_TOKEN`; without Slack, a random key in `LUCY_DATA_DIR/approval.key` made by `lucy dev` and read by `lucy chat`",
	},
	{
		Names:   []string{"OPENAI_API_KEY", "OPENAI_BASE_URL"},
		Meaning: "any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LiteLLM)",
		Default: "OpenAI",
	},
	{
		Names:   []string{"OPENROUTER_API_KEY"},
		Meaning: "use OpenRouter (sets the base URL)",
		Default: "unset",
	},
	{
		Names:   []string{"LUCY_MODEL_FAST", "LUCY_MODEL_DEFAULT", "LUCY_MODEL_CODE", "LUCY_MODEL_RESEARCH", "LUCY_MODEL_DOCUMENT", "LUCY_MODEL_FRONTIER"},
		Label:   "`LUCY_MODEL_FAST`, `_DEFAULT`, `_CODE`, `_RESEARCH`, `_DOCUMENT`, `_FRONTIER`",
		Meaning: "model per tier",
		Default: "per provider; a custom endpoint needs `LUCY_MODEL_DEFAULT` and uses it for every unset tier",
	},
	{
		Names:   []string{"LUCY_MEMORY_TOKENS"},
		Meaning: "budget of the team memory block in each run's system prompt, in tokens (about 4 characters each), 200 to 20,000 (see \"What Lucy remembers\" in [using.md](using.md#what-lucy-remembers))",
		Default: "`1500`",
	},
	{
		Names:   []string{"LUCY_MODEL_EMBEDDING"},
		Meaning: "embeddings model on the same OpenAI-compatible endpoint (for example `text-embedding-3-small`): notes get an embedding when written, and recall adds the notes closest in meaning to the words' hits; lucy_search_files finds the workspace files' passages by meaning too (their vectors kept in the state store, see \"Searching the team's files\" in [using.md](using.md#searching-the-teams-files-lucy_search_files))",
		Default: "unset (full-text search only)",
	},
	{
		Names:   []string{"LUCY_SETUP_CREATE_NAMESPACE"},
		Meaning: "whether `lucy setup` may create a missing `TEMPORAL_NAMESPACE` (`true` or `false`); `false` where namespaces are made elsewhere (Temporal Cloud), and a missing one is then an error",
		Default: "`true`",
	},
	{
		Names:   []string{"LUCY_TEMPORAL_CONNECT_TIMEOUT"},
		Meaning: "how long a process retries reaching Temporal at start before it gives up with an error",
		Default: "`30s` (`10s` for `dev` and `chat`)",
	},
	{
		Names:   []string{"LUCY_MODEL_CONCURRENCY"},
		Meaning: "how many calls one worker makes at once to one model (1–1000); more wait for a slot, heartbeating, so a burst of runs does not become a burst of 429s. A worker also runs at most 256 activities at once; the rest wait in Temporal's task queue for any worker",
		Default: "`16`",
	},
	{
		Names:   []string{"LUCY_SLACK_ARCHIVE_DAYS"},
		Meaning: "how many days the messages of the channels Lucy is in are kept in the Slack archive (the state store, `slack-archive/` under each team), where `lucy_search_slack_history` finds them without `SLACK_USER_TOKEN`; the gateway writes them as they arrive, with edits and deletions applied, and a channel's are purged when Lucy leaves it. Direct messages are never archived; `0` turns the archive off (0–3650)",
		Default: "`90`",
	},
	{
		Names:   []string{"LUCY_SPEND_TEAM_DAILY", "LUCY_SPEND_TEAM_MONTHLY", "LUCY_SPEND_PERSON_DAILY", "LUCY_SPEND_PERSON_MONTHLY"},
		Meaning: "the default model budgets of every team (its whole spend) and of each person in it, per UTC day and month: dollars estimated at list prices (`25`, `$25`) or tokens of every model (`2M tokens`; a model without a list price counts in tokens only), or both (`$25 or 2M tokens`). A new request over a budget is refused with a message in its thread; a request already running finishes. An admin overrides them per team with `lucy_set_spend_limit`, an operator with `lucy usage --set`; `lucy usage --team T` shows the spend against them",
		Default: "unset (`0`): no limit",
	},
	{
		Names:   []string{"LUCY_USER_EVENTS_PER_MINUTE"},
		Meaning: "how many messages one person may send Lucy per minute (bursts up to the same number), per gateway replica; the rest are acknowledged and ignored with one `event from a flooding user ignored` log line per person and minute. A cancel (\"cancel that\", \"stop\") is counted too, and still gets through over the limit to a thread Lucy has open; `0` turns the limit off",
		Default: "`20`",
	},
	{
		Names:   []string{"LUCY_WORKER_STOP_TIMEOUT"},
		Meaning: "how long `lucy worker` lets in-flight activities finish after SIGTERM before cancelling them (0s–1h); a container's stop grace period must be longer (see `deploy/README.md`)",
		Default: "`5m`",
	},
	{
		Names:   []string{"LUCY_MAX_JOBS_PER_TEAM", "LUCY_MAX_JOBS_PER_USER"},
		Meaning: "how many recurring jobs one workspace, and one person, may have (1–10000; the per-person limit at most the workspace's; admins are held only to the workspace's). Jobs beyond are refused with the count and what to do",
		Default: "`50`, `10`",
	},
	{
		Names:   []string{"LUCY_MAX_MONITORS_PER_TEAM", "LUCY_MAX_MONITORS_PER_USER"},
		Meaning: "the same for monitors",
		Default: "`50`, `10`",
	},
	{
		Names:   []string{"LUCY_MIN_JOB_INTERVAL"},
		Meaning: "the least time between two runs of a recurring job (whole minutes, `1m`–`24h`): each run is a whole agent run as the job's creator",
		Default: "`15m`",
	},
	{
		Names:   []string{"LUCY_MIN_MONITOR_INTERVAL"},
		Meaning: "the least time between two checks of a monitor (whole minutes, `1m`–`24h`); a monitor's default interval is 5 minutes, or this when larger",
		Default: "`5m`",
	},
	{
		Names:   []string{"LUCY_EMAIL_POLL_INTERVAL"},
		Meaning: "how often each connected mailbox with a channel is checked for new mail (`10s`–`1h`; see \"Email\" in [using.md](using.md#email-a-teams-mailbox-over-imap-and-smtp))",
		Default: "`1m`",
	},
	{
		Names:   []string{"LUCY_MAIL_CA_FILE"},
		Meaning: "a PEM file of CA certificates trusted, besides the system's, for connected mailboxes' IMAP and SMTP servers (a mail server with a private certificate); checked at start. Go's `SSL_CERT_FILE` / `SSL_CERT_DIR` replace the system's roots for every connection instead (see \"Email\" in [using.md](using.md#email-a-teams-mailbox-over-imap-and-smtp))",
		Default: "none",
	},
	{
		Names:   []string{"LUCY_GOOGLE_CLIENT_ID", "LUCY_GOOGLE_CLIENT_SECRET"},
		Meaning: "the OAuth client (a web application registered in the Google Cloud console, redirect URI `<LUCY_PUBLIC_URL>/mcp/oauth/callback`, scope `https://mail.google.com/`) with which Gmail and Google Workspace mailboxes sign in instead of a password; both or neither (see \"Mailboxes that sign in with OAuth\" below)",
		Default: "unset: such a mailbox connects only with an app password",
	},
	{
		Names:   []string{"LUCY_MICROSOFT_CLIENT_ID", "LUCY_MICROSOFT_CLIENT_SECRET", "LUCY_MICROSOFT_TENANT"},
		Meaning: "the app registered in Microsoft Entra (redirect URI `<LUCY_PUBLIC_URL>/mcp/oauth/callback`, delegated permissions `IMAP.AccessAsUser.All`, `SMTP.Send`, `offline_access` of Office 365 Exchange Online) with which Microsoft 365 mailboxes sign in; the ID and a client secret go together; the tenant (a directory ID or verified domain) limits sign-in to one organization (see \"Mailboxes that sign in with OAuth\" below)",
		Default: "unset: such a mailbox connects only with a password; tenant `organizations` (any work or school account)",
	},
	{
		Names:   []string{"LUCY_OPENAPI_MAX_DOCUMENT_MB"},
		Meaning: "the largest OpenAPI document a custom integration is read from, in MiB (1–256); a JSON document is streamed and only its chosen part kept, so this bounds the download (see \"Connect your tools\" in [using.md](using.md#connect-your-tools))",
		Default: "`32`",
	},
	{
		Names:   []string{"LUCY_OPENAPI_MAX_OPERATIONS"},
		Meaning: "how many operations of one OpenAPI service (a custom integration) become tools (1–100); a larger API is connected in the parts the request names (see \"Connect your tools\" in [using.md](using.md#connect-your-tools))",
		Default: "`30`",
	},
	{
		Names:   []string{"LUCY_MAX_TOOL_CALLS"},
		Meaning: "how many tool calls of one model reply are run (1–64); the excess calls get an error result the model can act on",
		Default: "`10`",
	},
	{
		Names:   []string{"LUCY_MAX_RUNS_PER_TEAM"},
		Meaning: "how many agent runs one workspace may have at once (0–1000, 0 = no cap); a request over the cap waits in the workspace's line, is told its place in its thread and starts when a slot frees; see \"Fairness across teams\" in [operating.md](operating.md#fairness-across-teams)",
		Default: "`0`",
	},
	{
		Names:   []string{"LUCY_SCRIPT_TIMEOUT", "LUCY_SCRIPT_MEMORY_MB"},
		Meaning: "limits of one `lucy_run_script` (wall and CPU time, 1s–5m; memory, 64–16384 MB); see \"What lucy_run_script can and cannot do\" in [using.md](using.md#what-lucy_run_script-can-and-cannot-do)",
		Default: "`10s`, `512`",
	},
	{
		Names:   []string{"LUCY_TEMPERATURE_FAST", "LUCY_TEMPERATURE_DEFAULT", "LUCY_TEMPERATURE_CODE", "LUCY_TEMPERATURE_RESEARCH", "LUCY_TEMPERATURE_DOCUMENT", "LUCY_TEMPERATURE_FRONTIER", "LUCY_MAX_OUTPUT_TOKENS_FAST", "LUCY_MAX_OUTPUT_TOKENS_DEFAULT", "LUCY_MAX_OUTPUT_TOKENS_CODE", "LUCY_MAX_OUTPUT_TOKENS_RESEARCH", "LUCY_MAX_OUTPUT_TOKENS_DOCUMENT", "LUCY_MAX_OUTPUT_TOKENS_FRONTIER"},
		Label:   "`LUCY_TEMPERATURE_<TIER>`, `LUCY_MAX_OUTPUT_TOKENS_<TIER>`",
		Meaning: "temperature (0–2) and output-token cap per tier (`FAST`, `DEFAULT`, `CODE`, `RESEARCH`, `DOCUMENT`, `FRONTIER`); reasoning models (OpenAI o-series and gpt-5, also as `openai/…` on OpenRouter) get no temperature and `max_completion_tokens` instead of `max_tokens`. Sub-agents use their registry's own settings",
		Default: "`0.7`; `4096` (`16384` on frontier)",
	},
	{
		Names:   []string{"LUCY_SEARCH_PROVIDER", "LUCY_SEARCH_API_KEY", "LUCY_SEARCH_MODEL", "LUCY_SEARCH_BASE_URL"},
		Meaning: "`lucy_web_search`'s provider: `openrouter` (an `:online` model, results from its url_citation annotations), `perplexity` (`sonar`, its search_results), `brave` (Brave Search API) or `tavily`; its key; the online model; another endpoint. Without a provider the tool tells the model search is not configured",
		Default: "`openrouter` with `OPENROUTER_API_KEY` and `google/gemini-2.5-flash:online` when that key is set; else off",
	},
	{
		Names:   []string{"LUCY_CHROMIUM"},
		Meaning: "the Chromium (or Chrome) binary `lucy_browse` and monitors with `render` run: a path or a name on PATH. A setting that names no executable withholds the tool",
		Default: "`chromium`, `chromium-browser`, `google-chrome-stable` or `google-chrome` on PATH; none: `lucy_browse` is not offered",
	},
	{
		Names:   []string{"LUCY_ALLOWED_PRIVATE_HOSTS"},
		Meaning: "internal hosts that `lucy_web_fetch`, `lucy_browse` (every request of the page), monitors, connected MCP servers, OpenAPI services and mail servers (the only hosts a mailbox may reach without TLS) may reach although their addresses are private, loopback, link-local or reserved: comma-separated host names (`wiki.internal`), host:port (`jira.corp:443`, `10.0.0.5:8443`, `[fd00::1]:8080`), IPs and CIDRs (`10.20.0.0/16`, `fd00::/8`). Cloud metadata addresses need an entry naming them exactly. See \"What lucy_web_fetch can reach\" in [using.md](using.md#what-lucy_web_fetch-can-reach)",
		Default: "unset: public addresses only",
	},
	{
		Names:   []string{"SLACK_USER_TOKEN"},
		Meaning: "a user token (`xoxp-`, scope `search:read`) for `lucy_search_slack_history`: Slack's search refuses bot tokens. Without it (and for everyone but the token's owner) the tool searches the Slack archive (`LUCY_SLACK_ARCHIVE_DAYS`) and the last 200 messages of up to 25 channels Lucy is in, only those the requester may read, and says so",
		Default: "unset",
	},
	{
		Names:   []string{"LUCY_PAYLOAD_KEYS"},
		Meaning: "encrypt every payload written to Temporal (AES-256-GCM): `id:base64key[,id:base64key…]`, each key 32 bytes (`openssl rand -base64 32`); the first seals new payloads, all of them open old ones, so rotate by putting the new key first and removing the old one once nothing running uses it. Every process (worker, gateway, `lucy chat`) must have the same list",
		Default: "unset: payloads in clear",
	},
	{
		Names:   []string{"LUCY_CODEC_ADDR"},
		Meaning: "where `lucy worker` serves the Web UI's codec endpoint (`/codec/encode`, `/codec/decode`) so operators see decoded payloads; point the UI's codec endpoint (`TEMPORAL_CODEC_ENDPOINT`) at `https://<your proxy>/codec`. On any address but loopback it requires `LUCY_CODEC_OIDC_ISSUER` and `LUCY_CODEC_OIDC_AUDIENCE` (the worker refuses to start otherwise): it decrypts every payload it is sent. `lucy dev` serves one on a loopback port by itself, without login, and configures its Web UI",
		Default: "unset",
	},
	{
		Names:   []string{"LUCY_CODEC_OIDC_ISSUER", "LUCY_CODEC_OIDC_AUDIENCE"},
		Meaning: "the Web UI's OpenID Connect login, which the codec endpoint then requires: every encode or decode request must carry an ID token (the UI sends it with `TEMPORAL_CODEC_PASS_ACCESS_TOKEN=true` and an https codec endpoint) that this issuer signed (keys from its discovery document's `jwks_uri`) for this audience, unexpired; otherwise 401 and nothing decoded. Set them to the UI's `TEMPORAL_AUTH_PROVIDER_URL` (https) and `TEMPORAL_AUTH_CLIENT_ID`. See \"The Web UI behind login\" in [operating.md](operating.md#the-web-ui-behind-login)",
		Default: "unset: the codec endpoint is allowed on loopback only",
	},
	{
		Names:   []string{"LUCY_CODEC_ORIGINS"},
		Meaning: "the Web UI origins (comma-separated `scheme://host[:port]`) the codec endpoint answers CORS for, when the browser reaches the codec on another origin than the UI's own (not needed when your proxy serves `/codec` on the UI's origin)",
		Default: "`http://127.0.0.1:<LUCY_UI_PORT>`, `http://localhost:<LUCY_UI_PORT>`",
	},
	{
		Names:   []string{"LUCY_CONTEXT_WINDOW"},
		Meaning: "context window in tokens for every model (set it for local models with a small window); it drives compaction at 70%",
		Default: "known per model family, else 128000",
	},
	{
		Names:   []string{"LUCY_LOG_LEVEL", "LUCY_LOG_FORMAT"},
		Meaning: "`debug`…`error`; `json` or `console`",
		Default: "`info`; `console` in dev, `json` otherwise",
	},
	{
		Names:   []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		Meaning: "turn OpenTelemetry tracing on and send spans there over OTLP (base URL, `/v1/traces` appended for HTTP; the `_TRACES_` one is used as is). See \"Traces\" under Operating",
		Default: "unset: tracing off",
	},
	{
		Names:   []string{"OTEL_TRACES_EXPORTER"},
		Meaning: "`otlp` turns tracing on (to `localhost:4318` without an endpoint), `none` turns it off; nothing else is supported",
		Default: "unset",
	},
	{
		Names:   []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		Meaning: "`http/protobuf` or `grpc`",
		Default: "`http/protobuf`",
	},
	{
		Names:   []string{"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"},
		Meaning: "the spans' resource",
		Default: "`service.name` `lucy-dev`, `lucy-worker`, `lucy-gateway` or `lucy-chat`",
	},
	{
		Names:   []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_SDK_DISABLED"},
		Meaning: "read by the OpenTelemetry SDK and exporters as the specification says (from the process environment)",
		Default: "the SDK's",
	},
}

// ConfigurationTableBegin and ConfigurationTableEnd are the marker comments around the generated
// table in docs/operating.md.
const (
	ConfigurationTableBegin = "<!-- configuration table: generated from config.Docs by `go test ./config -run TestConfigurationTable -update`; edit config/docs.go -->"
	ConfigurationTableEnd   = "<!-- end of configuration table -->"
)

// Table renders Docs as the Markdown table that sits between the markers in docs/operating.md.
func Table() string {
	var b strings.Builder
	b.WriteString("| variable | meaning | default |\n| --- | --- | --- |\n")
	for _, d := range Docs {
		label := d.Label
		if label == "" {
			quoted := make([]string, len(d.Names))
			for i, n := range d.Names {
				quoted[i] = "`" + n + "`"
			}
			label = strings.Join(quoted, ", ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", label, d.Meaning, d.Default)
	}
	return b.String()
}

// docProblems returns the names of Variables that no row of Docs names, and the names that more
// than one row names or that no package reads (not in Variables and not OTEL_), for the test.
func docProblems() (missing, extra []string) {
	seen := map[string]int{}
	for _, d := range Docs {
		for _, n := range d.Names {
			seen[n]++
		}
	}
	for _, v := range Variables() {
		if seen[v] == 0 {
			missing = append(missing, v)
		}
	}
	for n, count := range seen {
		if count > 1 || (!slices.Contains(Variables(), n) && !strings.HasPrefix(n, "OTEL_")) {
			extra = append(extra, n)
		}
	}
	slices.Sort(extra)
	return missing, extra
}
