package activities

// Approval prompts: the Block Kit message that asks for approval of an action (Approve and Deny
// buttons the gateway decodes), and its resolution. Whether a click counts is approval.go's.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/output"
	"github.com/lucy-agent/lucy/slackwire"
)

// ApprovalPromptInput is a request for approval of an action, with Approve and Deny buttons.
type ApprovalPromptInput struct {
	Team, Channel, ThreadTS, RunID string
	LaneID                         string // lane workflow ID, in the buttons' value
	Fingerprint                    string // the proposal's fingerprint, in the buttons' value
	Requester                      string // user ID of the person who asked
	Approvers                      string // ApproversChannel: anyone who may use the channel approves (a run started by mail)
	Summary                        string // mrkdwn: "I'd like to …"
	Details                        string // mrkdwn: exactly what will be done
	ExpiresAt                      time.Time
}

// ResolveApprovalInput replaces an approval prompt's buttons with its outcome.
type ResolveApprovalInput struct {
	Team, Channel, TS string
	Summary           string
	Outcome           string // "Approved by <@U1>", "Denied by <@U1>", "Expired — …"
	// What the audit record keeps of the decision (auditApproval): the run's thread and requester,
	// the tool asked about, the decision ("approved", "denied", "expired", "cancelled") and who
	// made it. Empty in a call scheduled before they were added: Outcome is read instead.
	RunID     string `json:"runId,omitempty"`
	ThreadTS  string `json:"threadTs,omitempty"`
	Requester string `json:"requester,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Decision  string `json:"decision,omitempty"`
	By        string `json:"by,omitempty"`
}

// Approval prompt Block Kit identifiers the gateway relies on.
const (
	ApprovalBlockID = "lucy_approval"
	ApproveActionID = "lucy_approve"
	DenyActionID    = "lucy_deny"
)

// ApprovalValue is the value of the approval buttons, which the gateway decodes.
type ApprovalValue struct {
	Lane        string `json:"lane"`
	Fingerprint string `json:"fp"`
}

// PostApprovalPrompt asks for approval with Approve and Deny buttons; idempotent by the metadata key
// "approval-<fingerprint>". It shows the summary and the details whole, mentions neutralized (a
// prompt never pings): details too long for the prompt go first, in messages of their own keyed
// "approval-<fingerprint>#<i>". TS is the prompt's ts, TSs every message in order.
func (a *Activities) PostApprovalPrompt(ctx context.Context, in ApprovalPromptInput) (PostResult, error) {
	parts, err := approvalParts(in)
	if err != nil {
		return PostResult{}, err
	}
	tss, err := a.postParts(ctx, "post approval prompt", in.Team, in.Channel, in.ThreadTS, in.RunID, parts)
	if err != nil || len(tss) == 0 {
		return PostResult{}, err
	}
	return PostResult{TS: tss[len(tss)-1], TSs: tss}, nil
}

// Room for the details of an approval. Slack documents 3,000 characters a section and 50 blocks a
// message, but refuses a message whose blocks hold much more than 12,000 characters in all
// (msg_blocks_too_long, undocumented; slackapi/bolt-js issue 2509 measured about 13,200), so a
// message carries at most approvalMessageChars of text to approve: three full sections.
const (
	approvalMessageChars = 9000
	// maxApprovalParts bounds the messages a prompt's details take: 12 messages of 9,000 characters
	// show a post of Slack's maximum 40,000 characters two and a half times over. Longer details
	// (a tool's arguments can be any size) are refused, not clipped: nobody approves what they
	// were not shown.
	maxApprovalParts = 12
)

// ErrApprovalTooLong is the error type of a prompt whose details are too long to show
// (maxApprovalParts): nothing was posted and the action is not done.
const ErrApprovalTooLong = "ApprovalTooLong"

// approvalParts lays out an approval prompt: the messages with the details that do not fit in the
// prompt, then the prompt itself (last). Summary and details are shown whole, in sections of at
// most maxSectionChars cut by output.SplitVerbatim, with every special mention neutralized.
func approvalParts(in ApprovalPromptInput) ([]slackPart, error) {
	value, err := json.Marshal(ApprovalValue{Lane: in.LaneID, Fingerprint: in.Fingerprint})
	if err != nil {
		return nil, err
	}
	summary := output.NeutralizeMentions(strings.TrimSpace(in.Summary), nil)
	details := output.NeutralizeMentions(strings.TrimSpace(in.Details), nil)
	key := approvalPrefix + in.Fingerprint

	var blocks []slack.Block
	for i, c := range output.SplitVerbatim(summary, maxSectionChars) {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwnText(c), nil, nil, slack.SectionBlockOptionBlockID(numberedID("lucy_approval_summary", i))))
	}
	chunks := output.SplitVerbatim(details, maxSectionChars)
	chars := utf8.RuneCountInString(details)
	var parts []slackPart
	if len(chunks) > 0 {
		// Whatever does not fit in the prompt next to the summary goes in messages before it.
		inPrompt := chars+utf8.RuneCountInString(summary) <= approvalMessageChars
		if !inPrompt {
			groups := groupChunks(chunks, approvalMessageChars)
			if len(groups) > maxApprovalParts {
				return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
					"the details to approve are too long to show (%s characters; at most about %s)",
					thousands(chars), thousands(maxApprovalParts*approvalMessageChars)), ErrApprovalTooLong, nil)
			}
			n := 0
			for g, group := range groups {
				head := fmt.Sprintf("Part %d of %d of what I'm asking approval for (the buttons follow the last part):", g+1, len(groups))
				pb := []slack.Block{slack.NewContextBlock("lucy_approval_part", mrkdwnText("_"+head+"_"))}
				for _, c := range group {
					pb = append(pb, slack.NewSectionBlock(mrkdwnText(c), nil, nil, slack.SectionBlockOptionBlockID(numberedID("lucy_approval_details", n))))
					n++
				}
				parts = append(parts, slackPart{key: fmt.Sprintf("%s#%d", key, g+1), text: head, blocks: pb})
			}
			blocks = append(blocks, slack.NewContextBlock("lucy_approval_length", mrkdwnText(fmt.Sprintf(
				"_The %d messages above show in full what you approve: %s characters._", len(groups), thousands(chars)))))
		} else {
			blocks = append(blocks, slack.NewContextBlock("lucy_approval_length", mrkdwnText(fmt.Sprintf(
				"_Below, in full, what you approve: %s characters._", thousands(chars)))))
			for i, c := range chunks {
				blocks = append(blocks, slack.NewSectionBlock(mrkdwnText(c), nil, nil, slack.SectionBlockOptionBlockID(numberedID("lucy_approval_details", i))))
			}
		}
	}
	who := "Only an admin can approve"
	switch {
	case in.Approvers == ApproversChannel && strings.HasPrefix(in.Channel, "D"):
		who = "New mail started this request: only <@" + in.Requester + "> or an admin can approve"
	case in.Approvers == ApproversChannel:
		who = "New mail started this request, not a person: anyone in this channel can approve"
	case in.Requester != "":
		who = "Only <@" + in.Requester + "> or an admin can approve"
	}
	if !in.ExpiresAt.IsZero() {
		exp := in.ExpiresAt.UTC()
		who += fmt.Sprintf(" · expires <!date^%d^{time}|%s>", exp.Unix(), exp.Format("15:04 UTC"))
	}
	blocks = append(blocks, slack.NewContextBlock("lucy_approval_context", mrkdwnText(who)))
	approve := slack.NewButtonBlockElement(ApproveActionID, string(value), plainText("Approve"))
	approve.Style = slack.StylePrimary
	deny := slack.NewButtonBlockElement(DenyActionID, string(value), plainText("Deny"))
	deny.Style = slack.StyleDanger
	blocks = append(blocks, slack.NewActionBlock(ApprovalBlockID, approve, deny))
	parts = append(parts, slackPart{key: key, text: "Approval needed: " + slackwire.Clip(summary, maxSectionChars), blocks: blocks})
	return parts, nil
}

// numberedID is base for the first block of its kind in a message and base_<i+1> for the others:
// block IDs must be unique within a message.
func numberedID(base string, i int) string {
	if i == 0 {
		return base
	}
	return fmt.Sprintf("%s_%d", base, i+1)
}

// groupChunks packs chunks, in order, into groups of at most max characters (a chunk longer than
// max is a group of its own).
func groupChunks(chunks []string, max int) [][]string {
	var groups [][]string
	size := 0
	for _, c := range chunks {
		n := utf8.RuneCountInString(c)
		if len(groups) == 0 || size+n > max {
			groups = append(groups, nil)
			size = 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], c)
		size += n
	}
	return groups
}

// thousands writes n with comma separators: 12,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ResolveApprovalPrompt replaces the prompt's buttons with its outcome.
func (a *Activities) ResolveApprovalPrompt(ctx context.Context, in ResolveApprovalInput) error {
	// Recorded first: the decision stands whether or not Slack takes the prompt's update (a retry
	// finds the entry there already).
	a.auditApproval(ctx, in)
	blocks, text := resolvedApprovalBlocks(in)
	_, _, _, err := a.Slack(in.Team).UpdateMessageContext(ctx, in.Channel, in.TS,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		return a.slackFail("resolve approval prompt", in.Team, in.Channel, err)
	}
	return nil
}

func resolvedApprovalBlocks(in ResolveApprovalInput) ([]slack.Block, string) {
	summary := slackwire.Clip(output.NeutralizeMentions(strings.TrimSpace(in.Summary), nil), maxSectionChars)
	outcome := strings.TrimSpace(in.Outcome)
	blocks := []slack.Block{
		slack.NewSectionBlock(mrkdwnText(summary), nil, nil, slack.SectionBlockOptionBlockID("lucy_approval_summary")),
		slack.NewContextBlock("lucy_approval_outcome", mrkdwnText(slackwire.Clip(outcome, maxSectionChars))),
	}
	return blocks, summary + " — " + outcome
}

func mrkdwnText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func plainText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}
