package agent

import (
	"encoding/json"
	"strings"
)

// Step is one tool call as the status line names it: the tool and the arguments the model wrote.
type Step struct {
	Name, Arguments string
}

// StepStatus is what the thread's status line says while the steps run, in words a person
// understands: "reading #sales history", "asking the research agent", "searching the web and reading
// a web page". It is pure and deterministic (workflow code calls it). Journal bookkeeping is left
// out when anything else runs.
func StepStatus(steps []Step) string {
	var words []string
	seen := map[string]bool{}
	for _, s := range steps {
		switch strings.ToLower(s.Name) {
		case ToolGetRunJournal, ToolUpdateRunJournal, ToolAppendRunJournalEntry:
			if len(steps) > 1 {
				continue
			}
		}
		w := stepWords(s)
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	switch len(words) {
	case 0:
		return "working on it"
	case 1:
		return words[0]
	case 2:
		return words[0] + " and " + words[1]
	default:
		return words[0] + ", " + words[1] + " and more"
	}
}

// stepWords names one step; a channel's history names the channel when the model gave its name.
func stepWords(s Step) string {
	n := strings.ToLower(strings.TrimSpace(s.Name))
	switch n {
	case "lucy_get_channel_history", "lucy_get_thread":
		if ch := channelName(s.Arguments); ch != "" {
			return "reading " + ch + " history"
		}
		return "reading the Slack history"
	case "lucy_search_slack_history":
		if ch := channelName(s.Arguments); ch != "" {
			return "searching " + ch + " history"
		}
		return "searching the Slack history"
	}
	if agentName, ok := strings.CutPrefix(n, "delegate_to_"); ok {
		if kind, ok := strings.CutSuffix(agentName, "_agent"); ok && kind != "" {
			return "asking the " + strings.ReplaceAll(kind, "_", " ") + " agent"
		}
	}
	return HumanToolName(s.Name)
}

// channelName is the "#name" the model's arguments give in "channel" ("" for an ID or nothing: an ID
// means nothing to a person reading the status).
func channelName(args string) string {
	var a struct {
		Channel string `json:"channel"`
	}
	if json.Unmarshal([]byte(args), &a) != nil {
		return ""
	}
	c := strings.TrimSpace(a.Channel)
	if name, ok := strings.CutPrefix(c, "#"); ok && name != "" && !strings.ContainsAny(name, " \n<>") && len(name) <= 80 {
		return "#" + name
	}
	return ""
}

// Status line words for the steps that are not tool calls.
const (
	StatusThinking      = "thinking"
	StatusGoingOver     = "going over what I found"
	StatusApproval      = "waiting for your approval"
	StatusAnswer        = "waiting for your answer"
	StatusWritingAnswer = "writing the answer"
)
