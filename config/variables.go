package config

import (
	"fmt"
	"slices"
	"strings"
)

// fixedVariables are the environment variables Load reads, apart from the per-tier ones
// (tierVariables). Load reads through guard, which refuses any name missing here, so this list and
// Load cannot drift apart: deploy files are checked against Variables (package deploy's tests), and
// a variable added to Load without being listed fails every test that loads a configuration. Each
// listed variable has its meaning and default in a row of Docs (docs.go), the configuration table
// of docs/operating.md (TestDocsCoverVariables, TestConfigurationTable).
var fixedVariables = []string{
	// Temporal
	// (Temporal's standard client configuration is temporalVariables, added by Variables; these
	// two are its aliases, Lucy's names from before it read the standard ones.)
	"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY",
	"LUCY_TEMPORAL_CONNECT_TIMEOUT", "LUCY_SETUP_CREATE_NAMESPACE",
	// `lucy worker`'s graceful stop
	"LUCY_WORKER_STOP_TIMEOUT",
	// Embedded development stack and local files
	"LUCY_DATA_DIR", "LUCY_TEMPORAL_PORT", "LUCY_UI_PORT",
	// HTTP listeners (the gateway's, and the worker's health and metrics)
	"LUCY_HTTP_ADDR", "LUCY_WORKER_HTTP_ADDR",
	// The gateway's public base URL (the OAuth sign-in callback of MCP servers)
	"LUCY_PUBLIC_URL",
	// Slack
	"SLACK_BOT_TOKEN", "SLACK_USER_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_API_URL",
	// Approvals
	"LUCY_ADMIN_USERS", "LUCY_APPROVAL_KEY",
	// Stored credentials (package secrets)
	"LUCY_SECRETS_KEY",
	// Limits
	"LUCY_MAX_TOOL_CALLS", "LUCY_MAX_RUNS_PER_TEAM", "LUCY_SCRIPT_TIMEOUT", "LUCY_SCRIPT_MEMORY_MB", "LUCY_USER_EVENTS_PER_MINUTE", "LUCY_SLACK_ARCHIVE_DAYS",
	"LUCY_MODEL_CONCURRENCY", "LUCY_OPENAPI_MAX_OPERATIONS", "LUCY_OPENAPI_MAX_DOCUMENT_MB",
	// Model spend budgets (package spend)
	"LUCY_SPEND_TEAM_DAILY", "LUCY_SPEND_TEAM_MONTHLY", "LUCY_SPEND_PERSON_DAILY", "LUCY_SPEND_PERSON_MONTHLY",
	// Recurring jobs and monitors
	"LUCY_MAX_JOBS_PER_TEAM", "LUCY_MAX_JOBS_PER_USER", "LUCY_MAX_MONITORS_PER_TEAM", "LUCY_MAX_MONITORS_PER_USER",
	"LUCY_MIN_JOB_INTERVAL", "LUCY_MIN_MONITOR_INTERVAL",
	// Connected mailboxes: the new-mail listener, and the CA of mail servers with a private certificate
	"LUCY_EMAIL_POLL_INTERVAL", "LUCY_MAIL_CA_FILE",
	// Mailboxes that sign in with OAuth: the operator's clients at Google and Microsoft
	"LUCY_GOOGLE_CLIENT_ID", "LUCY_GOOGLE_CLIENT_SECRET", "LUCY_MICROSOFT_CLIENT_ID", "LUCY_MICROSOFT_CLIENT_SECRET", "LUCY_MICROSOFT_TENANT",
	// Payload encryption and the Web UI's codec endpoint
	"LUCY_PAYLOAD_KEYS", "LUCY_CODEC_ADDR", "LUCY_CODEC_OIDC_ISSUER", "LUCY_CODEC_OIDC_AUDIENCE", "LUCY_CODEC_ORIGINS",
	// LLM
	"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY", "LUCY_CONTEXT_WINDOW",
	// Web search
	"LUCY_SEARCH_PROVIDER", "LUCY_SEARCH_API_KEY", "LUCY_SEARCH_MODEL", "LUCY_SEARCH_BASE_URL",
	// The internal hosts URLs from chat may reach (web fetch, monitors, MCP servers, OpenAPI services)
	"LUCY_ALLOWED_PRIVATE_HOSTS",
	// The browser of lucy_browse
	"LUCY_CHROMIUM",
	// Workspace files: the local folder, or a shared S3-compatible store
	"LUCY_WORKSPACE_STORE", "LUCY_S3_ENDPOINT", "LUCY_S3_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	// Logging
	"LUCY_LOG_LEVEL", "LUCY_LOG_FORMAT",
	// MCP servers for every team
	"LUCY_MCP_CONFIG",
	"LUCY_SERVICE_CATALOG",
	// Memory: the prompt block's budget, and the embeddings model of semantic recall
	"LUCY_MEMORY_TOKENS", "LUCY_MODEL_EMBEDDING",
}

// tierPrefixes are the per-tier variables: the prefix followed by the tier's name in upper case
// (LUCY_MODEL_FAST, LUCY_TEMPERATURE_FRONTIER, …).
var tierPrefixes = []string{"LUCY_MODEL_", "LUCY_TEMPERATURE_", "LUCY_MAX_OUTPUT_TOKENS_"}

func tierVariable(prefix, tier string) string { return prefix + strings.ToUpper(tier) }

// Variables returns, sorted, the name of every environment variable Load reads: what an operator
// may set in a deployment. (LUCY_SANDBOX_CHILD is not one: the binary sets it on the script
// sandbox's child process, and a worker started with it would run as a sandbox child.)
func Variables() []string {
	out := slices.Concat(fixedVariables, temporalVariables)
	for _, p := range tierPrefixes {
		for _, tier := range Tiers {
			out = append(out, tierVariable(p, tier))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// guard wraps getenv so that Load can read only listed variables. Reading an unlisted one is a bug in
// this package, not an operator's mistake, hence the panic: it fails the first test that reaches it.
func guard(getenv func(string) string) func(string) string {
	known := map[string]bool{}
	for _, v := range Variables() {
		known[v] = true
	}
	return func(k string) string {
		if !known[k] {
			panic(fmt.Sprintf("config: Load reads %s, which is not in Variables (add it to fixedVariables)", k))
		}
		return getenv(k)
	}
}
