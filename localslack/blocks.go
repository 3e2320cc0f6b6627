package localslack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/slackwire"
)

// Block Kit limits Slack enforces on messages (https://docs.slack.dev/reference/block-kit/blocks). The
// server checks the ones Lucy can get wrong, so that tests catch a layout Slack would reject.
const (
	maxBlocks          = 50
	maxSectionText     = slackwire.MaxSectionChars
	maxSectionFields   = 10
	maxFieldText       = 2000
	maxHeaderText      = 150
	maxContextElements = 10
	maxActionElements  = 25
	maxButtonText      = 75
	maxButtonValue     = 2000
	maxID              = 255
	maxMarkdownTotal   = 12000
)

// validateBlocks checks a blocks parameter and returns it compacted (nil for "[]"). Errors answer
// invalid_blocks with Slack-style response_metadata messages.
func validateBlocks(raw string) (json.RawMessage, *apiError) {
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return nil, blockErr("invalid_blocks_format", "must be a JSON array of objects", "")
	}
	if len(blocks) == 0 {
		return nil, nil
	}
	if len(blocks) > maxBlocks {
		return nil, blockErr("invalid_blocks", fmt.Sprintf("no more than %d items allowed", maxBlocks), "/blocks")
	}
	blockIDs, actionIDs := map[string]bool{}, map[string]bool{}
	markdown := 0
	for i, b := range blocks {
		at := fmt.Sprintf("/blocks/%d", i)
		typ, _ := b["type"].(string)
		if typ == "" {
			return nil, blockErr("invalid_blocks", "missing required field: type", at)
		}
		if id, ok := b["block_id"].(string); ok {
			if len(id) > maxID {
				return nil, blockErr("invalid_blocks", fmt.Sprintf("must be less than %d characters", maxID+1), at+"/block_id")
			}
			if blockIDs[id] {
				return nil, blockErr("invalid_blocks", "duplicate block_id", at+"/block_id")
			}
			blockIDs[id] = true
		}
		var msg, where string
		switch typ {
		case "section":
			msg, where = checkSection(b)
		case "header":
			if n := textLen(b["text"]); n == 0 || n > maxHeaderText {
				msg, where = fmt.Sprintf("must be 1 to %d characters", maxHeaderText), "/text/text"
			}
		case "context":
			if els, _ := b["elements"].([]any); len(els) == 0 || len(els) > maxContextElements {
				msg, where = fmt.Sprintf("must have 1 to %d elements", maxContextElements), "/elements"
			}
		case "actions":
			msg, where = checkActions(b, actionIDs)
		case "context_actions":
			msg, where = checkContextActions(b, actionIDs)
		case "task_card":
			// https://docs.slack.dev/reference/block-kit/blocks/task-card-block: task_id and title
			// required; status one of pending, in_progress, complete, error.
			id, _ := b["task_id"].(string)
			title, _ := b["title"].(string)
			switch st, _ := b["status"].(string); {
			case id == "":
				msg, where = "missing required field: task_id", "/task_id"
			case title == "":
				msg, where = "missing required field: title", "/title"
			case st != "" && st != "pending" && st != "in_progress" && st != "complete" && st != "error":
				msg, where = "must be one of pending, in_progress, complete, error", "/status"
			}
		case "markdown":
			t, _ := b["text"].(string)
			markdown += utf8.RuneCountInString(t)
			if strings.TrimSpace(t) == "" {
				msg, where = "must be more than 0 characters", "/text"
			} else if markdown > maxMarkdownTotal {
				msg, where = fmt.Sprintf("markdown blocks must total no more than %d characters", maxMarkdownTotal), "/text"
			}
		}
		if msg != "" {
			return nil, blockErr("invalid_blocks", msg, at+where)
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(raw)); err != nil {
		return nil, blockErr("invalid_blocks_format", "must be a JSON array of objects", "")
	}
	return json.RawMessage(buf.Bytes()), nil
}

func checkSection(b map[string]any) (string, string) {
	fields, _ := b["fields"].([]any)
	if _, ok := b["text"]; !ok && len(fields) == 0 {
		return "must provide either text or fields", ""
	}
	if _, ok := b["text"]; ok {
		if n := textLen(b["text"]); n == 0 || n > maxSectionText {
			return fmt.Sprintf("must be 1 to %d characters", maxSectionText), "/text/text"
		}
	}
	if len(fields) > maxSectionFields {
		return fmt.Sprintf("no more than %d items allowed", maxSectionFields), "/fields"
	}
	for j, f := range fields {
		if n := textLen(f); n == 0 || n > maxFieldText {
			return fmt.Sprintf("must be 1 to %d characters", maxFieldText), fmt.Sprintf("/fields/%d/text", j)
		}
	}
	return "", ""
}

func checkActions(b map[string]any, actionIDs map[string]bool) (string, string) {
	els, _ := b["elements"].([]any)
	if len(els) == 0 || len(els) > maxActionElements {
		return fmt.Sprintf("must have 1 to %d elements", maxActionElements), "/elements"
	}
	for j, e := range els {
		el, _ := e.(map[string]any)
		at := fmt.Sprintf("/elements/%d", j)
		if msg, where := checkActionID(el, at, actionIDs); msg != "" {
			return msg, where
		}
		if el["type"] != "button" {
			continue
		}
		if n := textLen(el["text"]); n == 0 || n > maxButtonText {
			return fmt.Sprintf("must be 1 to %d characters", maxButtonText), at + "/text/text"
		}
		if v, _ := el["value"].(string); len(v) > maxButtonValue {
			return fmt.Sprintf("must be less than %d characters", maxButtonValue+1), at + "/value"
		}
		if st, ok := el["style"].(string); ok && st != "primary" && st != "danger" {
			return "must be one of primary, danger", at + "/style"
		}
	}
	return "", ""
}

// maxContextActions: a context_actions block's "elements": "An array of feedback buttons elements
// and icon button elements. Maximum number of items is 5"
// (https://docs.slack.dev/reference/block-kit/blocks/context-actions-block).
const maxContextActions = 5

// checkContextActions checks a context_actions block: 1 to 5 elements, each feedback_buttons or
// icon_button. A feedback_buttons element needs positive_button and negative_button, each with a
// plain_text text of at most 75 characters and a value of at most 2,000, and an
// accessibility_label of at most 75 when it has one
// (https://docs.slack.dev/reference/block-kit/block-elements/feedback-buttons-element, "Button
// object fields").
func checkContextActions(b map[string]any, actionIDs map[string]bool) (string, string) {
	els, _ := b["elements"].([]any)
	if len(els) == 0 || len(els) > maxContextActions {
		return fmt.Sprintf("must have 1 to %d elements", maxContextActions), "/elements"
	}
	for j, e := range els {
		el, _ := e.(map[string]any)
		at := fmt.Sprintf("/elements/%d", j)
		if msg, where := checkActionID(el, at, actionIDs); msg != "" {
			return msg, where
		}
		switch el["type"] {
		case "icon_button":
			continue
		case "feedback_buttons":
		default:
			return "must be one of feedback_buttons, icon_button", at + "/type"
		}
		for _, side := range []string{"positive_button", "negative_button"} {
			btn, ok := el[side].(map[string]any)
			if !ok {
				return "missing required field: " + side, at
			}
			txt, _ := btn["text"].(map[string]any)
			if n := textLen(btn["text"]); txt["type"] != "plain_text" || n == 0 || n > maxButtonText {
				return fmt.Sprintf("must be plain_text of 1 to %d characters", maxButtonText), at + "/" + side + "/text"
			}
			if v, _ := btn["value"].(string); v == "" || len(v) > maxButtonValue {
				return fmt.Sprintf("must be 1 to %d characters", maxButtonValue), at + "/" + side + "/value"
			}
			if l, _ := btn["accessibility_label"].(string); utf8.RuneCountInString(l) > maxButtonText {
				return fmt.Sprintf("must be at most %d characters", maxButtonText), at + "/" + side + "/accessibility_label"
			}
		}
	}
	return "", ""
}

// checkActionID checks an interactive element's action_id, at where: at most maxID characters and
// unique among the message's elements (actionIDs holds those seen).
func checkActionID(el map[string]any, at string, actionIDs map[string]bool) (string, string) {
	id, ok := el["action_id"].(string)
	if !ok {
		return "", ""
	}
	if len(id) > maxID {
		return fmt.Sprintf("must be less than %d characters", maxID+1), at + "/action_id"
	}
	if actionIDs[id] {
		return "duplicate action_id", at + "/action_id"
	}
	actionIDs[id] = true
	return "", ""
}

// textLen is the length of a text object's text (0 when it is not one).
func textLen(v any) int {
	obj, _ := v.(map[string]any)
	t, _ := obj["text"].(string)
	return utf8.RuneCountInString(t)
}

func blockErr(code, msg, pointer string) *apiError {
	m := "[ERROR] " + msg
	if pointer != "" {
		m += " [json-pointer:" + pointer + "]"
	}
	return &apiError{code: code, extra: map[string]any{
		"errors":            []string{msg},
		"response_metadata": map[string]any{"messages": []string{m}},
	}}
}

// blockTasks are the task_card blocks of a message's blocks, as task cards.
func blockTasks(blocks json.RawMessage) []Task {
	if len(blocks) == 0 {
		return nil
	}
	var bs []struct {
		Type   string `json:"type"`
		TaskID string `json:"task_id"`
		Title  string `json:"title"`
		Status string `json:"status"`
	}
	if json.Unmarshal(blocks, &bs) != nil {
		return nil
	}
	var out []Task
	for _, b := range bs {
		if b.Type == "task_card" {
			out = append(out, Task{ID: b.TaskID, Title: b.Title, Status: b.Status})
		}
	}
	return out
}
