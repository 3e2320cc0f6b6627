package output

import (
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	longJSON := `{"id": 12345, "name": "quarterly-report", "status": "complete", "rows": [1, 2, 3, 4, 5, 6, 7, 8]}`
	tests := []struct {
		name, in, want string
	}{
		{"clean text unchanged", "The report is ready. Revenue grew **12%**.", "The report is ready. Revenue grew **12%**."},
		{"empty", "", ""},

		{"app file path", "I saved it to /app/workspaces/T123/reports/q3.xlsx.", "I saved it to q3.xlsx."},
		{"home directory", "The logs are in /home/lucy/logs/ now.", "The logs are in the workspace now."},
		{"tmp path", "Wrote /tmp/run-42/out.csv, then /tmp.", "Wrote out.csv, then the workspace."},
		{"workspace path", "See workspaces/T123/notes/plan.md for details.", "See plan.md for details."},
		{"windows path", `Open C:\Users\bob\Desktop\report.docx today.`, "Open report.docx today."},
		{"sandbox path", "Download sandbox:/mnt/data/chart.png here.", "Download chart.png here."},
		{"path in parens", "(/app/data/x.json)", "(x.json)"},
		{"url path kept", "See https://example.com/home/page and http://localhost/tmp/x.", "See https://example.com/home/page and http://localhost/tmp/x."},
		{"other absolute path kept", "Edit /etc/hosts as root.", "Edit /etc/hosts as root."},
		{"link to path", "[Download the report](/app/files/report.pdf)", "Download the report"},
		{"link to path without text", "[](sandbox:/mnt/data/x.png)", "the file"},
		{"path code span", "Open `/home/lucy/out/data.csv` and `/tmp/work`.", "Open `data.csv` and the workspace."},
		{"path in longer code span", "Run `cat /app/x/log.txt | tail`.", "Run `cat log.txt | tail`."},

		{"tool name", "I ran lucy_web_search for that.", "I ran web search for that."},
		{"tool call", `I used lucy_web_fetch(url="https://x.com", max_chars=3000) to read it.`, "I used web browsing to read it."},
		{"tool call nested parens", `lucy_run_script(code="print(1)") worked`, "a script worked"},
		{"tool code span", "via `lucy_generate_excel`", "via spreadsheet generation"},
		{"tool inside code span text", "`call lucy_send_email now`", "`call email now`"},
		{"composio", "COMPOSIO_SEARCH_TOOLS found GitHub.", "the connected apps found GitHub."},
		{"delegate", "I asked delegate_to_research_agent.", "I asked research helper."},
		{"custom wrapper", "lucy_custom_polarsh_list_products returned 3 products.", "the Polarsh integration returned 3 products."},
		{"unknown lucy tool", "lucy_check_calendar_slots said no.", "check calendar slots said no."},
		{"functions prefix", "functions.lucy_web_search({\"q\": \"x\"})", "web search"},
		{"tool in url kept", "https://github.com/acme/lucy_web_search", "https://github.com/acme/lucy_web_search"},
		{"identifier containing lucy kept", "the my_lucy_thing variable", "the my_lucy_thing variable"},

		{"json blob", "Here is what came back:\n" + longJSON + "\nThat's all.", "Here is what came back:\n" + jsonNote + "\nThat's all."},
		{"pretty json blob", "Result:\n{\n  \"id\": 12345,\n  \"name\": \"quarterly-report\",\n  \"status\": \"complete\",\n  \"owner\": \"finance\"\n}\nDone.", "Result:\n" + jsonNote + "\nDone."},
		{"json array", `[{"id": 1, "name": "alpha", "state": "on"}, {"id": 2, "name": "beta", "state": "off"}]`, jsonNote},
		{"python repr", `{'id': 12345, 'name': 'quarterly-report', 'status': 'complete', 'rows': [1, 2, 3, 4, 5, 6, 7]}`, jsonNote},
		{"unbalanced json kept", `{"id": 12345, "name": "quarterly-report", "status": "complete", "rows": [1, 2, 3, 4, 5, 6`, `{"id": 12345, "name": "quarterly-report", "status": "complete", "rows": [1, 2, 3, 4, 5, 6`},
		{"short json kept", `Send {"ok": true} back.` + "\n" + `{"ok": true}`, `Send {"ok": true} back.` + "\n" + `{"ok": true}`},
		{"inline json kept", "It returned " + longJSON + " today.", "It returned " + longJSON + " today."},
		{"bracket prose kept", "[Note] " + strings.Repeat("this line starts with a bracket but is prose, ", 3), "[Note] " + strings.TrimSpace(strings.Repeat("this line starts with a bracket but is prose, ", 3))},
		{"json in code kept", "```json\n" + longJSON + "\n```", "```json\n" + longJSON + "\n```"},

		{"thinking", "<thinking>The user wants X. I should call lucy_x.</thinking>\nHere you go.", "Here you go."},
		{"think inline", "Sure <think>hmm</think>thing.", "Sure thing."},
		{"execution plan", "<execution_plan>\n1. search\n2. answer\n</execution_plan>\n\nThe answer is 42.", "The answer is 42."},
		{"tool call tag", "<tool_call>{\"name\": \"lucy_web_search\"}</tool_call>Found it.", "Found it."},
		{"case and attributes", "<Thinking type=\"x\">secret</THINKING>ok", "ok"},
		{"unwrap answer", "<answer>The answer is 42.</answer>", "The answer is 42."},
		{"unclosed thinking", "<thinking>\nThe real answer.", "The real answer."},
		{"stray close tag", "Done.</thinking>", "Done."},
		{"thinking spanning code", "<thinking>\n```\nx\n```\n</thinking>\nok", "ok"},
		{"tag in code kept", "```xml\n<thinking>keep</thinking>\n```", "```xml\n<thinking>keep</thinking>\n```"},
		{"html comment", "a <!-- hidden\nnote --> b", "a  b"},

		{"as an ai", "As an AI language model, I don't have opinions on that.", "I don't have opinions on that."},
		{"as an ai mid sentence", "Well, as an AI, I can't vote.", "Well, I can't vote."},
		{"as an ai developed by", "As an AI assistant developed by OpenAI, I can help.", "I can help."},
		{"just an ai", "I'm just an AI, so I can't see your screen.", "I can't see your screen."},
		{"i am an ai sentence", "Good question. I am an AI language model. Here it is.", "Good question. Here it is."},
		{"disclaimer in code span kept", "Type `As an AI, I` there.", "Type `As an AI, I` there."},
		{"ai in normal text kept", "AI models such as this one are useful.", "AI models such as this one are useful."},

		{"slack token", "Your token xoxb-123456789012-abcdefghijkl works.", "Your token [redacted] works."},
		{"openai key", "key sk-proj-abcdefghijklmnopqrstuvwxyz123", "key [redacted]"},
		{"github token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[redacted]"},
		{"not a key", "the task-abcdefghijklmnopqrstuvwxyz id", "the task-abcdefghijklmnopqrstuvwxyz id"},

		{"code block untouched", "```sh\ncp /app/x.txt /tmp/y.txt\nlucy_web_search(q)\n```", "```sh\ncp /app/x.txt /tmp/y.txt\nlucy_web_search(q)\n```"},
		{"tilde code block untouched", "~~~\n/home/u/a.txt\n~~~", "~~~\n/home/u/a.txt\n~~~"},
		{"unclosed code block untouched", "Try:\n```\nls /tmp/x", "Try:\n```\nls /tmp/x"},
		{"blank lines collapse", "a\n\n<thinking>x</thinking>\n\n\nb", "a\n\nb"},
		{"crlf", "a\r\nb /tmp/c.txt", "a\nb c.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sanitize(tt.in); got != tt.want {
				t.Errorf("Sanitize(%q)\ngot:  %q\nwant: %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestHumanizeTool(t *testing.T) {
	tests := []struct{ in, want string }{
		{"lucy_web_search", "web search"},
		{"LUCY_WEB_SEARCH", "web search"},
		{"lucy_send_email", "email"},
		{"lucy_search_emails", "email"},
		{"lucy_create_cron", "scheduled tasks"},
		{"lucy_list_heartbeats", "monitors"},
		{"lucy_spaces_deploy", "Spaces"},
		{"lucy_custom_stripe_list_charges", "the Stripe integration"},
		{"COMPOSIO_EXECUTE_TOOL", "the connected apps"},
		{"delegate_to_code_agent", "code helper"},
		{"lucy_", "a tool"},
	}
	for _, tt := range tests {
		if got := humanizeTool(tt.in); got != tt.want {
			t.Errorf("humanizeTool(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
