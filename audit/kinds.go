package audit

import "strings"

// kindByTool is the kind of each compiled-in tool that is not read-only, by its fixed name (the
// names are the wire format, docs/architecture.md; this package imports no tool domain, so it names
// them here). A tool not listed is KindIntegration when a run-time source offers it (MCP server,
// OpenAPI service) and KindOther otherwise: it is still recorded, only filed under other.
var kindByTool = map[string]string{
	"lucy_send_email":     KindEmail,
	"lucy_reply_to_email": KindEmail,

	"lucy_post_message": KindPost,

	"lucy_write_file":     KindFile,
	"lucy_edit_file":      KindFile,
	"lucy_delete_file":    KindFile,
	"lucy_generate_csv":   KindFile,
	"lucy_generate_chart": KindFile,
	"lucy_generate_excel": KindFile,
	"lucy_generate_pdf":   KindFile,
	"lucy_save_skill":     KindFile,

	"lucy_connect_email":              KindConnect,
	"lucy_disconnect_email":           KindConnect,
	"lucy_connect_mcp_server":         KindConnect,
	"lucy_disconnect_mcp_server":      KindConnect,
	"lucy_connect_service":            KindConnect,
	"lucy_sign_in_service":            KindConnect,
	"lucy_disconnect_service":         KindConnect,
	"lucy_resolve_custom_integration": KindConnect,
	"lucy_delete_custom_integration":  KindConnect,
	"lucy_store_api_key":              KindConnect,
	"lucy_share_api_key":              KindConnect,

	"lucy_create_cron":      KindSchedule,
	"lucy_modify_cron":      KindSchedule,
	"lucy_pause_cron":       KindSchedule,
	"lucy_resume_cron":      KindSchedule,
	"lucy_trigger_cron":     KindSchedule,
	"lucy_delete_cron":      KindSchedule,
	"lucy_create_heartbeat": KindSchedule,
	"lucy_delete_heartbeat": KindSchedule,

	"lucy_remember": KindMemory,
	"lucy_forget":   KindMemory,
}

// KindOf is the kind of a call of the tool name that is not read-only.
func KindOf(name string) string {
	if k, ok := kindByTool[name]; ok {
		return k
	}
	// The names run-time sources give their tools (docs/architecture.md, fixed names).
	if strings.HasPrefix(name, "mcp__") || strings.HasPrefix(name, "lucy_custom_") {
		return KindIntegration
	}
	return KindOther
}

// ValidKind reports whether k is one of Kinds.
func ValidKind(k string) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}
