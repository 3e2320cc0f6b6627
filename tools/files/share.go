package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/tools"
)

// Slack is what sharing a generated file needs of a team's Slack client (a consumer-side interface:
// tools.SlackAPI and *slack.Client have it).
type Slack interface {
	UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error)
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
	// AuthTestContext names the bot's user, the author of the files it shared (findSharedFile).
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
}

// SaveAndShare writes a generated file in the team's workspace and shares it in the conversation's
// thread with the files v2 upload. The file is written first, so that a failed upload still leaves
// the deliverable in the workspace (and the model is told so). Replacing an existing file with
// different content waits for a person's approval (checkReplace). same says what "the file already
// holds" means for this kind of file ("exactly these rows").
func (w *Workspace) SaveAndShare(ctx context.Context, inv tools.Invocation, tool, rel string, data []byte, shape, same string) (tools.Output, error) {
	st, err := w.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	unlock := w.Lock(inv.Team)
	what, hold, err := replaceFile(ctx, st, tool, rel, data, inv)
	unlock()
	if err != nil {
		return tools.Output{}, err
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
	out := tools.Output{Artifacts: []string{rel}}

	if inv.Channel == "" {
		out.Content = made + ". There is no Slack conversation to share it in."
		return out, nil
	}
	var api Slack
	if w.slack != nil {
		api = w.slack(inv.Team)
	}
	if api == nil {
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
		failed, err := tools.SlackFailed(ctx, tool, err)
		var transient *tools.TransientError
		if errors.As(err, &transient) {
			transient.Err = fmt.Errorf("%s was saved in the workspace, but sharing it failed: %w", rel, transient.Err)
		}
		if err != nil {
			return tools.Output{}, err
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
func findSharedFile(ctx context.Context, api Slack, inv tools.Invocation, name string, size int) (string, bool) {
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
