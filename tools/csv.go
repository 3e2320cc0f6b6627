package tools

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/slack-go/slack"
)

// csvTools create CSV files and share them in the conversation.
var csvTools = []entry{
	{
		spec: Spec{
			Name: GenerateCSV,
			Description: "Create a CSV file from rows of cells, save it in the team's workspace and share it in the current " +
				"Slack thread. The first row is usually the header. Every cell is a string (write numbers as \"42\"). " +
				"Replacing an existing file with different rows waits for a person's approval.",
			Human: "creating a CSV file",
			Long:  true,
		},
		required: []string{"filename", "rows"},
		props: func() []prop {
			return []prop{
				strProp("filename", "File name, e.g. \"q3-signups.csv\" (\".csv\" is added if missing); may include "+
					"folders relative to the workspace.", 1, maxPathLen),
				prop{"rows", map[string]any{
					"type":        "array",
					"description": "The rows, each an array of cell strings.",
					"minItems":    1,
					"maxItems":    MaxCSVRows,
					"items": map[string]any{
						"type":  "array",
						"items": map[string]any{"type": "string"},
					},
				}},
			}
		},
		run: (*Registry).generateCSV,
	},
}

func (a *generateCSVArgs) filePath() string { return a.Filename }

type generateCSVArgs struct {
	Filename string     `json:"filename"`
	Rows     [][]string `json:"rows"`
}

// generateCSV writes the rows to a workspace file and shares it in the conversation's thread with the
// files v2 upload. The file is written first, so that a failed upload still leaves the deliverable in
// the workspace (and the model is told so).
func (r *Registry) generateCSV(ctx context.Context, e entry, inv Invocation) (Output, error) {
	var args generateCSVArgs
	rel, err := decodePath(e, inv, GenerateCSV, false, &args)
	if err != nil {
		return Output{}, err
	}
	if !strings.EqualFold(path.Ext(rel), ".csv") {
		rel += ".csv"
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.UseCRLF = true // RFC 4180, and what spreadsheet applications expect
	cols := 0
	for _, row := range args.Rows {
		cols = max(cols, len(row))
	}
	if cols == 0 {
		return Output{}, argErrorf(GenerateCSV, "every row is empty; give at least one cell")
	}
	if err := w.WriteAll(args.Rows); err != nil {
		return Output{}, fmt.Errorf("%s: encode: %w", GenerateCSV, err)
	}
	data := buf.Bytes()
	if len(data) > MaxFileBytes {
		return Output{}, argErrorf(GenerateCSV, "the CSV would be %s; the limit is 1 MB: split the data into several files",
			humanBytes(int64(len(data))))
	}

	shape := fmt.Sprintf("%d rows, %d columns, %s", len(args.Rows), cols, humanBytes(int64(len(data))))
	return r.saveAndShare(ctx, inv, GenerateCSV, rel, data, shape, "exactly these rows")
}

// saveAndShare writes a generated file in the team's workspace and shares it in the conversation's
// thread with the files v2 upload. The file is written first, so that a failed upload still leaves
// the deliverable in the workspace (and the model is told so). Replacing an existing file with
// different content waits for a person's approval (checkReplace). same says what "the file already
// holds" means for this kind of file ("exactly these rows").
func (r *Registry) saveAndShare(ctx context.Context, inv Invocation, tool, rel string, data []byte, shape, same string) (Output, error) {
	st, err := r.workspace(inv.Team)
	if err != nil {
		return Output{}, err
	}
	unlock := r.lock(inv.Team)
	what, hold, err := replaceFile(ctx, st, tool, rel, data, inv)
	unlock()
	if err != nil {
		return Output{}, err
	}
	if hold != nil {
		return *hold, nil
	}
	var made string
	switch what {
	case "created it":
		made = fmt.Sprintf("Created %s (%s) in the workspace", rel, shape)
	case "":
		made = fmt.Sprintf("Found %s already in the workspace with %s (%s)", rel, same, shape)
	default:
		made = fmt.Sprintf("Wrote %s (%s) in the workspace (%s)", rel, shape, what)
	}
	out := Output{Artifacts: []string{rel}}

	if inv.Channel == "" {
		out.Content = made + ". There is no Slack conversation to share it in."
		return out, nil
	}
	api, unavailable := r.slackAPI(inv.Team)
	if unavailable != nil {
		out.Content = made + ", but did not share it: Slack is not connected for this workspace."
		return out, nil
	}
	if what == "" {
		// The workspace already held exactly this file: a repeat of this call (an operator's Reset
		// re-runs it, or the model asks again) may have shared it already. Files v2 uploads take no
		// idempotency key, so look in the thread for it before sharing it a second time.
		if id, ok := findSharedFile(ctx, api, inv, path.Base(rel), len(data)); ok {
			out.Content = fmt.Sprintf("%s; it is already shared in the thread (Slack file %s).", made, id)
			return out, nil
		}
	}
	file, err := api.UploadFileContext(ctx, slack.UploadFileParameters{
		Reader:          bytes.NewReader(data),
		FileSize:        len(data),
		Filename:        path.Base(rel),
		Title:           path.Base(rel),
		Channel:         inv.Channel,
		ThreadTimestamp: inv.ThreadTS,
	})
	if err != nil {
		failed, err := slackFailed(ctx, tool, err)
		var transient *TransientError
		if errors.As(err, &transient) {
			transient.Err = fmt.Errorf("%s was saved in the workspace, but sharing it failed: %w", rel, transient.Err)
		}
		if err != nil {
			return Output{}, err
		}
		// The file exists: say so, so that the model does not generate it again to retry the upload.
		out.IsError = true
		out.Content = fmt.Sprintf("Error: %s, but could not share it in the thread: %s", made,
			strings.TrimPrefix(failed.Content, "Error: "))
		return out, nil
	}
	out.Content = fmt.Sprintf("%s and shared it in the thread (Slack file %s).", made, file.ID)
	return out, nil
}

// findSharedFile looks in the conversation's thread for a file Lucy shared with this name and size.
// A failed lookup is not an error: the file is shared again, which is the lesser harm.
// Lucy's share is known by its author, the bot's user ID (auth.test): Slack's file_share message
// carries user, upload, display_as_bot and files, and no bot_id, which only chat.postMessage's
// messages have.
func findSharedFile(ctx context.Context, api SlackAPI, inv Invocation, name string, size int) (string, bool) {
	if inv.ThreadTS == "" {
		return "", false
	}
	me, err := api.AuthTestContext(ctx)
	if err != nil || me.UserID == "" {
		return "", false
	}
	params := &slack.GetConversationRepliesParameters{ChannelID: inv.Channel, Timestamp: inv.ThreadTS, Limit: 200}
	for range 5 {
		msgs, more, next, err := api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return "", false
		}
		for _, m := range msgs {
			if m.User != me.UserID && (me.BotID == "" || m.BotID != me.BotID) {
				continue
			}
			for _, f := range m.Files {
				if f.Name == name && f.Size == size {
					return f.ID, true
				}
			}
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return "", false
}
