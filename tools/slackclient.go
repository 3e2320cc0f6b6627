package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/slack-go/slack"
)

// The Slack client as the tools of several domains use it (the Slack tools, files shared in a thread,
// recurring jobs and monitors): reaching a team's client, classifying Slack's errors for the model,
// and resolving the channel the model named.

// slackFailed classifies an error from the Slack Web API: rate limits, 5xx and network trouble are
// transient; Slack's error codes become a message the model can act on. Slack's errors never carry the
// token (it travels in the request body), and neither do ours.
func slackFailed(ctx context.Context, tool string, err error) (Output, error) {
	if ctx.Err() != nil {
		return Output{}, fmt.Errorf("%s: %w", tool, ctx.Err())
	}
	var rateLimited *slack.RateLimitedError
	var status slack.StatusCodeError
	var apiErr slack.SlackErrorResponse
	switch {
	case errors.As(err, &rateLimited):
		return Output{}, &TransientError{Tool: tool, Err: errors.New("rate limited by Slack"), RetryAfter: rateLimited.RetryAfter}
	case errors.As(err, &status):
		if status.Retryable() {
			return Output{}, &TransientError{Tool: tool, Err: fmt.Errorf("HTTP %d from Slack", status.Code)}
		}
		return ToolError("Slack answered HTTP %d.", status.Code), nil
	case errors.As(err, &apiErr):
		switch apiErr.Err {
		case "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return Output{}, &TransientError{Tool: tool, Err: fmt.Errorf("error %s from Slack", apiErr.Err)}
		}
		return ToolError("%s", slackHint(apiErr)), nil
	case TransientNetErr(err):
		return Output{}, &TransientError{Tool: tool, Err: fmt.Errorf("cannot reach Slack: %w", err)}
	}
	return ToolError("the Slack request failed: %v", err), nil
}

func slackHint(e slack.SlackErrorResponse) string {
	switch e.Err {
	case "not_in_channel":
		return "Lucy is not a member of that channel. Ask someone there to invite her (/invite @Lucy), then try again."
	case "channel_not_found":
		return "Slack cannot find that channel, or Lucy cannot see it (private channels need an invitation). " +
			"Use lucy_list_slack_channels to find the right one."
	case "thread_not_found", "message_not_found":
		return "there is no message with that ts in that channel. Take the ts from lucy_get_channel_history."
	case "is_archived":
		return "that channel is archived; nothing can be posted in it."
	case "missing_scope":
		need := ""
		if e.Needed != "" {
			need = " (it needs " + e.Needed + ")"
		}
		return "Lucy's Slack app is not allowed to do this" + need + "; a workspace admin must add the permission."
	case "invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive":
		return "Slack rejected Lucy's credentials; a workspace admin must reconnect the app."
	case "msg_too_long":
		return "the message is too long for Slack; shorten it or split it."
	case "no_text":
		return "the message is empty."
	case "restricted_action", "restricted_action_read_only_channel", "restricted_action_thread_only_channel",
		"restricted_action_non_threadable_channel", "ekm_access_denied", "cannot_reply_to_message":
		return "Slack does not allow Lucy to post there."
	case "user_not_found", "user_not_visible":
		return "Slack cannot find that user."
	}
	return fmt.Sprintf("Slack answered with the error %q.", e.Err)
}

// TransientNetErr reports network failures that may heal: timeouts, refused or reset connections.
func TransientNetErr(err error) bool {
	var netErr net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return !dnsErr.IsNotFound
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF):
		return true
	case errors.As(err, &netErr):
		return netErr.Timeout()
	}
	return false
}

// channelRef is a channel the model named, resolved to an ID.
type channelRef struct {
	id    string
	label string // how results and approval prompts name it: "#general", or the ID when given one
}

// parseChannel reads a channel the model gave: an ID (C…, G…, D…, and for posts U…/W…), a Slack
// mention (<#C123|general>) or a name (#general, general). It returns the ID, or the name to look up.
func parseChannel(s string) (id, name string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "<#") && strings.HasSuffix(s, ">") {
		inner := strings.TrimSuffix(strings.TrimPrefix(s, "<#"), ">")
		id, label, _ := strings.Cut(inner, "|")
		if looksLikeID(id) {
			return id, ""
		}
		s = label
	}
	if strings.HasPrefix(s, "<@") && strings.HasSuffix(s, ">") {
		inner := strings.TrimSuffix(strings.TrimPrefix(s, "<@"), ">")
		id, _, _ := strings.Cut(inner, "|")
		if looksLikeID(id) {
			return id, ""
		}
	}
	if looksLikeID(s) {
		return s, ""
	}
	return "", strings.ToLower(strings.TrimPrefix(s, "#"))
}

// looksLikeID matches Slack conversation and user IDs: an upper-case type letter and upper-case
// letters and digits.
func looksLikeID(s string) bool {
	if len(s) < 3 || len(s) > 24 || !strings.ContainsRune("CGDUW", rune(s[0])) {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// resolveChannel turns the model's channel into an ID, looking names up with conversations.list.
// allowUsers accepts user IDs (a direct message) for posting.
func resolveChannel(ctx context.Context, api SlackAPI, tool, s string, allowUsers bool) (channelRef, *Output, error) {
	id, name := parseChannel(s)
	if id != "" {
		if !allowUsers && (id[0] == 'U' || id[0] == 'W') {
			return channelRef{}, nil, ArgErrorf(tool, "%q is a user ID; give a channel ID (C0123ABCD) or name (#general)", id)
		}
		return channelRef{id: id, label: id}, nil, nil
	}
	if name == "" {
		return channelRef{}, nil, ArgErrorf(tool, "give a channel ID (C0123ABCD) or name (#general)")
	}
	channels, truncated, err := listAllChannels(ctx, api)
	if err != nil {
		out, err := slackFailed(ctx, tool, err)
		return channelRef{}, &out, err
	}
	for _, c := range channels {
		if strings.EqualFold(c.Name, name) {
			return channelRef{id: c.ID, label: "#" + c.Name}, nil, nil
		}
	}
	more := ""
	if truncated {
		more = fmt.Sprintf(" (only the first %d channels were searched; give the channel ID instead)", MaxListedChannels)
	}
	out := ToolError("there is no channel named #%s that Lucy can see%s. Use lucy_list_slack_channels to find it; "+
		"private channels need Lucy invited.", name, more)
	return channelRef{}, &out, nil
}

// listAllChannels pages through conversations.list, up to MaxListedChannels.
func listAllChannels(ctx context.Context, api SlackAPI) (channels []slack.Channel, truncated bool, err error) {
	params := &slack.GetConversationsParameters{
		Types:           []string{"public_channel", "private_channel"},
		ExcludeArchived: true,
		Limit:           200,
	}
	for {
		page, cursor, err := api.GetConversationsContext(ctx, params)
		if err != nil {
			return nil, false, err
		}
		channels = append(channels, page...)
		if len(channels) >= MaxListedChannels {
			return channels[:MaxListedChannels], cursor != "" || len(channels) > MaxListedChannels, nil
		}
		if cursor == "" {
			return channels, false, nil
		}
		params.Cursor = cursor
	}
}

// SlackFailed classifies an error from the Slack Web API for a domain package: rate limits, 5xx and
// network trouble are a *TransientError; Slack's error codes become an Output the model can act on.
func SlackFailed(ctx context.Context, tool string, err error) (Output, error) {
	return slackFailed(ctx, tool, err)
}

// ParseChannel reads a channel the model gave: an ID (C…, G…, D…, and for posts U…/W…), a Slack
// mention (<#C123|general>) or a name (#general, general). It returns the ID, or the name to look up.
func ParseChannel(s string) (id, name string) { return parseChannel(s) }

// ResolveChannel turns the model's channel into an ID and the label results and approval prompts
// name it by ("#general", or the ID when given one), looking names up with conversations.list.
// allowUsers accepts user IDs (a direct message) for posting. out, when not nil, is the answer for
// the model (no such channel, Slack's error).
func ResolveChannel(ctx context.Context, api SlackAPI, tool, s string, allowUsers bool) (id, label string, out *Output, err error) {
	ref, out, err := resolveChannel(ctx, api, tool, s, allowUsers)
	return ref.id, ref.label, out, err
}

// ListAllChannels pages through conversations.list (public and private channels, not archived), up
// to MaxListedChannels; truncated says there were more.
func ListAllChannels(ctx context.Context, api SlackAPI) (channels []slack.Channel, truncated bool, err error) {
	return listAllChannels(ctx, api)
}

// SlackAPI is the part of *slack.Client the tools use (a consumer-side interface; tests use a real
// client against localslack).
type SlackAPI interface {
	GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error)
	GetConversationsContext(ctx context.Context, params *slack.GetConversationsParameters) ([]slack.Channel, string, error)
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	GetPermalinkContext(ctx context.Context, params *slack.PermalinkParameters) (string, error)
	// GetUserInfoContext and GetConversationInfoContext serve the scheduling tools: the requester's
	// time zone, and whether Lucy can post where a job or monitor reports.
	GetUserInfoContext(ctx context.Context, user string, options ...slack.GetUserInfoOption) (*slack.User, error)
	GetConversationInfoContext(ctx context.Context, input *slack.GetConversationInfoInput) (*slack.Channel, error)
	// GetConversationsForUserContext (users.conversations) tells which conversations the requester is
	// in: the access rule (package slackaccess).
	GetConversationsForUserContext(ctx context.Context, params *slack.GetConversationsForUserParameters) ([]slack.Channel, string, error)
	// UploadFileContext is slack-go's files v2 upload (files.getUploadURLExternal, the upload itself,
	// files.completeUploadExternal); slack-go v0.35 renamed UploadFileV2Context to it.
	UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error)
	// AuthTestContext names the bot's user, the author of the files it shared (package files).
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
}

var _ SlackAPI = (*slack.Client)(nil)

// SlackSearchAPI is the part of the user-token client (SLACK_USER_TOKEN) that lucy_search_slack_history
// uses.
type SlackSearchAPI interface {
	SearchMessagesContext(ctx context.Context, query string, params slack.SearchParameters) (*slack.SearchMessages, error)
	// AuthTestContext names the token's owner: only that person's requests search with it.
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
}

var _ SlackSearchAPI = (*slack.Client)(nil)
