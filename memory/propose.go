package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/steps"
)

// After each run, one call of the fast model proposes the durable facts the people stated in it
// (Activities.NoteFromRun). This file is its pure part: the input the model reads (the people's own
// messages only: never a tool's result or a fetched page, so that a page that says "remember that…"
// cannot plant a note) and the policy that decides which proposals are kept (the seed's: a
// confidence threshold, no volatile or speculative statements).

// Said is one message a person wrote in the run: the run's own record of it (steps.Said).
type Said = steps.Said

// ProposalInput is the user message of the model call: the channel and the people's messages, cut
// to maxChars (the newest kept: the request comes first, then what was added to it).
func ProposalInput(channel string, said []Said, maxChars int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Channel: <#%s>\n\nThe people's messages in this request, oldest first, between the markers:\n<messages>\n", channel)
	room := maxChars
	var lines []string
	for _, s := range said {
		line := "<@" + s.User + ">: " + strings.ReplaceAll(strings.TrimSpace(s.Text), "</messages>", "‹/messages>") + "\n"
		if len(line) > room {
			line = line[:max(room, 0)]
		}
		room -= len(line)
		if line != "" {
			lines = append(lines, line)
		}
	}
	b.WriteString(strings.Join(lines, ""))
	b.WriteString("</messages>\n\nAnswer with the JSON object only.")
	return b.String()
}

// Proposal is one fact the model proposes to remember.
type Proposal struct {
	Scope      string   `json:"scope"`
	About      string   `json:"about"`
	Note       string   `json:"note"`
	Tags       []string `json:"tags"`
	Confidence float64  `json:"confidence"`
	Volatile   bool     `json:"volatile"`
	SaidBy     string   `json:"said_by"`
}

// ParseProposals reads the model's reply: {"notes": [...]}, alone or in a Markdown code fence.
func ParseProposals(reply string) ([]Proposal, error) {
	s := strings.TrimSpace(reply)
	if i := strings.Index(s, "{"); i >= 0 {
		if j := strings.LastIndex(s, "}"); j > i {
			s = s[i : j+1]
		}
	}
	var out struct {
		Notes *[]Proposal `json:"notes"`
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("not the JSON object asked for: %w", err)
	}
	if out.Notes == nil {
		return nil, errors.New(`no "notes" list in the reply`)
	}
	return *out.Notes, nil
}

// KeepInput is the run a proposal comes from.
type KeepInput struct {
	Channel, ThreadTS, Requester string
	Said                         []Said
	// Origin is the visibility of Channel (Viewer.Origin); the zero Origin (unknown) counts as
	// private.
	Origin Origin
}

// Keep applies the memory policy to proposals and returns the drafts to remember, at most limit:
//   - only at or above MinConfidence, and never a statement marked volatile (true now, not for long);
//   - a fact is attributed to a person who spoke in the run (else the requester), and a person
//     note is about a person who spoke, unless it names someone else explicitly by ID;
//   - a channel note is about the run's channel only;
//   - from a conversation that is not a public channel (a private channel, a group DM, a DM, or
//     one whose kind is unknown), a workspace or entity note is kept as a note about that
//     conversation: a fact said there must not reach the prompts of other channels, and the
//     note records where it came from so that only that conversation's people read it.
func Keep(proposals []Proposal, in KeepInput, limit int) []Draft {
	var speakers []string
	for _, s := range in.Said {
		if !slices.Contains(speakers, s.User) {
			speakers = append(speakers, s.User)
		}
	}
	var out []Draft
	for _, p := range proposals {
		if len(out) == limit {
			break
		}
		if p.Volatile || p.Confidence < MinConfidence || p.Confidence > 1 {
			continue
		}
		by := in.Requester
		if id, ok := UserID(p.SaidBy); ok && slices.Contains(speakers, id) {
			by = id
		}
		if by == "" {
			continue
		}
		d := Draft{Scope: Scope(p.Scope), About: p.About, Text: p.Note, Tags: p.Tags, Confidence: p.Confidence,
			Source: Source{By: by, Channel: in.Channel, Thread: in.ThreadTS, Via: ViaNoticed,
				Visibility: in.Origin.Visibility, Person: in.Origin.Person}}
		if in.Origin.Visibility != VisPublic && (d.Scope == Workspace || d.Scope == Entity) {
			d.Scope = Channel
		}
		switch d.Scope {
		case Person:
			if _, ok := UserID(p.About); !ok {
				d.About = by
			}
		case Channel:
			d.About = in.Channel
		}
		if _, err := d.normalize(); err != nil {
			continue
		}
		out = append(out, d)
	}
	return out
}
