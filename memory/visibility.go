package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// Who may see a note, and who may change it.
//
// A note is what someone said in a conversation, so it is as private as that conversation: each note
// records the visibility of the conversation it came from (Source.Visibility, and for a DM its
// person, Source.Person), read from Slack (conversations.info) when it is written. Reading then
// follows the access rule of package slackaccess:
//
//   - a note from a public channel, or one an operator wrote, is everyone's;
//   - a note from the conversation the request comes from is readable there;
//   - a note from a DM is its person's only (admins included: a DM is never a team's);
//   - a note from a private channel or a group DM is for its members (users.conversations, cached a
//     minute), and admins (LUCY_ADMIN_USERS);
//   - a note that records no visibility (written before it was recorded, or when Slack could not
//     say) is readable in the conversation it came from, by its author, and by admins: the safe
//     reading, since it may come from a DM or a private channel.
//
// The prompt's memory block is read by everyone in the conversation the run answers in, so it is
// narrower than a person's own recall: public notes and notes from this very conversation, and, in
// the requester's own DM with Lucy (where only they read), everything they may read.
//
// Changing or forgetting a note is for its author (Source.By) or an admin, whatever an approval
// says: the requester gives the approval.

// The visibility of the conversation a note came from (Source.Visibility).
const (
	VisPublic  = "public"  // a public channel: everyone in the workspace
	VisPrivate = "private" // a private channel: its members
	VisGroup   = "group"   // a group DM: its members
	VisDM      = "dm"      // a DM with Lucy: its person only
)

// Origin is the visibility of a conversation, as a note records it.
type Origin struct {
	Visibility string // one of the Vis* constants; "" when unknown
	Person     string // a DM's person
}

// Viewer applies the access rule to notes. A nil *Viewer knows no admin, no membership and no
// conversation's kind: it shows each person public notes, their own, and those of the current
// conversation only.
type Viewer struct {
	access *slackaccess.Access
	slack  func(team string) slackaccess.API
}

// NewViewer returns the rule over access (the admins and the membership cache the Slack tools use)
// and the teams' bot clients (nil, or a nil client: Slack cannot be asked).
func NewViewer(access *slackaccess.Access, slack func(team string) slackaccess.API) *Viewer {
	return &Viewer{access: access, slack: slack}
}

func (v *Viewer) client(team string) slackaccess.API {
	if v == nil || v.slack == nil {
		return nil
	}
	return v.slack(team)
}

// IsAdmin reports whether user is in LUCY_ADMIN_USERS.
func (v *Viewer) IsAdmin(user string) bool {
	return v != nil && v.access != nil && v.access.IsAdmin(user)
}

// Origin returns the visibility of conversation channel of team (conversations.info). Without a
// Slack client it is unknown (the zero Origin), which every reader treats as private; an error is
// Slack's and means the note must not be written as if it were known.
func (v *Viewer) Origin(ctx context.Context, team, channel string) (Origin, error) {
	api := v.client(team)
	if api == nil || channel == "" {
		return Origin{}, nil
	}
	ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel})
	if err != nil {
		return Origin{}, fmt.Errorf("conversations.info %s: %w", channel, err)
	}
	return originOf(ch), nil
}

func originOf(ch *slack.Channel) Origin {
	switch {
	case ch.IsIM:
		return Origin{Visibility: VisDM, Person: ch.User}
	case ch.IsMpIM:
		return Origin{Visibility: VisGroup}
	case ch.IsPrivate || ch.IsGroup:
		return Origin{Visibility: VisPrivate}
	}
	return Origin{Visibility: VisPublic}
}

// Reader is who asks to see notes, from which conversation.
type Reader struct {
	Team, User, Channel string
}

// sight decides, note by note, what one reader may see. Membership is asked of Slack once, the first
// time a note needs it; a failure to ask hides the notes that needed it and is reported by err.
type sight struct {
	v        *Viewer
	ctx      context.Context
	r        Reader
	audience bool // the prompt block: what everyone in the conversation may read
	ownDM    bool // the conversation is the reader's own DM with Lucy: the audience is them alone

	asked   bool
	members map[string]bool
	err     error
}

// readable is a person's own reading (lucy_recall, lucy_forget, an edit): the access rule.
func (v *Viewer) readable(ctx context.Context, r Reader) *sight {
	return &sight{v: v, ctx: ctx, r: r}
}

// forAudience is the prompt block's reading: what everyone in r.Channel may read, or, in the
// reader's own DM (ownDM), what they may read.
func (v *Viewer) forAudience(ctx context.Context, r Reader, ownDM bool) *sight {
	return &sight{v: v, ctx: ctx, r: r, audience: !ownDM, ownDM: ownDM}
}

func (s *sight) member(channel string) bool {
	if !s.asked {
		s.asked = true
		api := s.v.client(s.r.Team)
		if api == nil || s.v.access == nil {
			return false
		}
		s.members, s.err = s.v.access.ChannelsOf(s.ctx, api, s.r.Team, s.r.User)
	}
	return s.members[channel]
}

// sees reports whether the reader may see n.
func (s *sight) sees(n Note) bool {
	src := n.Source
	switch {
	case src.Via == ViaOperator || src.Visibility == VisPublic:
		return true
	case src.Channel != "" && src.Channel == s.r.Channel:
		return true
	case s.audience || s.r.User == "":
		return false
	case src.Visibility == VisDM:
		return src.Person != "" && src.Person == s.r.User
	case src.Visibility == VisPrivate || src.Visibility == VisGroup:
		return s.v.IsAdmin(s.r.User) || s.member(src.Channel)
	}
	// No recorded visibility: its author's and the admins' only.
	return src.By == s.r.User || s.v.IsAdmin(s.r.User)
}

// filter keeps the notes the reader may see, at most limit (0: all).
func (s *sight) filter(notes []Note, limit int) []Note {
	var out []Note
	for _, n := range notes {
		if limit > 0 && len(out) == limit {
			break
		}
		if s.sees(n) {
			out = append(out, n)
		}
	}
	return out
}

// ErrNotAllowed wraps the refusal of a change to a note the requester may not change.
var ErrNotAllowed = errors.New("not allowed")

// MayChange tells whether user may change or forget n: its author or an admin (an approval does not
// make anyone else its owner). The reason is for the model, and through it the person.
func (v *Viewer) MayChange(n Note, user string) error {
	switch {
	case user == "":
		return fmt.Errorf("%w: this request has no requester, so nobody can be checked as the note's author", ErrNotAllowed)
	case n.Source.By == user, v.IsAdmin(user):
		return nil
	case n.Source.By == Operator || n.Source.Via == ViaOperator:
		return fmt.Errorf("%w: the note `%s` was written by an operator; only an admin can change or forget it", ErrNotAllowed, n.ID)
	}
	return fmt.Errorf("%w: the note `%s` is <@%s>'s; only its author or an admin can change or forget it. Ask them",
		ErrNotAllowed, n.ID, n.Source.By)
}
