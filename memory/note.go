package memory

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Scope is what a note is about.
type Scope string

// The scopes of a note. A workspace note is about the whole team; the others name their subject in
// Note.About: a channel ID, a Slack user ID, an entity's name.
const (
	Workspace Scope = "workspace"
	Channel   Scope = "channel"
	Person    Scope = "person"
	Entity    Scope = "entity"
)

// Scopes are the scopes in the order the prompt block lists them.
var Scopes = []Scope{Workspace, Channel, Person, Entity}

// ValidScope reports whether s is one of Scopes.
func ValidScope(s Scope) bool { return slices.Contains(Scopes, s) }

// Where a note came from (Source.Via).
const (
	ViaTold     = "told"     // a person asked Lucy to remember it (lucy_remember)
	ViaNoticed  = "noticed"  // noted after a run from what people said
	ViaOperator = "operator" // written by an operator
)

// Operator is Source.By for a note an operator wrote.
const Operator = "operator"

// Limits of what is kept.
const (
	// MaxNoteChars bounds a note's text: a note is a fact, not a document.
	MaxNoteChars = 500
	// MaxTags bounds a note's tags, and MaxTagChars each tag.
	MaxTags     = 8
	MaxTagChars = 32
	// MaxAboutChars bounds an entity's name.
	MaxAboutChars = 80
	// MaxNotesPerTeam bounds a team's notes, so that a loop of writes cannot fill the store.
	MaxNotesPerTeam = 20_000
)

// MinConfidence is the seed's threshold (002, Appendix E: confidence defaults to 0.70): a note
// proposed after a run is kept only at or above it.
const MinConfidence = 0.7

// Source says where a note came from.
type Source struct {
	// By is the Slack user ID of the person who said it, or "operator".
	By string `json:"by"`
	// Channel and Thread are where it was said (empty for an operator's note).
	Channel string `json:"channel,omitempty"`
	Thread  string `json:"thread,omitempty"`
	// Via is how it was noted: ViaTold, ViaNoticed or ViaOperator.
	Via string `json:"via"`
	// Visibility is the visibility of Channel when the note was written (VisPublic, VisPrivate,
	// VisGroup, VisDM), and Person a DM's person: who may read the note (visibility.go). Empty in
	// notes written before it was recorded, which only the conversation, the author and admins see.
	Visibility string `json:"visibility,omitempty"`
	Person     string `json:"person,omitempty"`
}

// Note is one remembered fact, as stored (one object per note) and as exported.
type Note struct {
	Version    int       `json:"v"`
	ID         string    `json:"id"`
	Team       string    `json:"team"`
	Scope      Scope     `json:"scope"`
	About      string    `json:"about,omitempty"` // channel ID, user ID or entity name; empty for the workspace
	Text       string    `json:"text"`
	Tags       []string  `json:"tags,omitempty"`
	Confidence float64   `json:"confidence"`
	Source     Source    `json:"source"`
	UpdatedBy  string    `json:"updatedBy,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	// Embedding is the note's text as a vector of EmbeddingModel (LUCY_MODEL_EMBEDDING), absent
	// without one.
	Embedding      []float32 `json:"embedding,omitempty"`
	EmbeddingModel string    `json:"embeddingModel,omitempty"`
}

// subjectKey is the note's subject as the index matches it: entity names ignore case and spacing.
func (n Note) subjectKey() string { return subjectKey(n.Scope, n.About) }

func subjectKey(s Scope, about string) string {
	if s == Entity {
		return strings.ToLower(strings.Join(strings.Fields(about), " "))
	}
	return about
}

// Label names the note's subject for people and the model: "workspace", "channel <#C1>", "person
// <@U1>", "Acme".
func (n Note) Label() string {
	switch n.Scope {
	case Channel:
		return "channel <#" + n.About + ">"
	case Person:
		return "person <@" + n.About + ">"
	case Entity:
		return n.About
	}
	return "workspace"
}

// SourceLine says who said it and when: "<@U1>, 2026-11-20" or "operator, 2026-11-20".
func (n Note) SourceLine() string {
	who := "operator"
	if n.Source.By != Operator && n.Source.By != "" {
		who = "<@" + n.Source.By + ">"
	}
	s := who + ", " + n.Updated.UTC().Format("2006-01-02")
	if n.Source.Via == ViaNoticed {
		s += ", noted from the conversation"
	}
	return s
}

var (
	idRE    = regexp.MustCompile(`^mem-[0-9a-f]{10}$`)
	userRE  = regexp.MustCompile(`^(?:<@)?([UW][A-Z0-9]{1,20})(?:\|[^>]*)?>?$`)
	chanRE  = regexp.MustCompile(`^(?:<#)?([CDG][A-Z0-9]{1,20})(?:\|[^>]*)?>?$`)
	spaceRE = regexp.MustCompile(`\s+`)
)

// ValidID reports whether id is a note ID ("mem-" and 10 hex digits).
func ValidID(id string) bool { return idRE.MatchString(id) }

func newID() string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "mem-" + hex.EncodeToString(b[:])
}

// UserID reads a Slack user ID from "U123" or a mention "<@U123>"; ok is false for anything else.
func UserID(s string) (string, bool) {
	m := userRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ChannelID reads a Slack channel ID from "C123" or a link "<#C123|name>".
func ChannelID(s string) (string, bool) {
	m := chanRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", false
	}
	return m[1], true
}

// cleanText makes a note's text one line: control characters and runs of spaces become one space.
func cleanText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
}

// cleanTags lowercases, trims and deduplicates tags, keeping their order.
func cleanTags(tags []string) ([]string, error) {
	var out []string
	for _, t := range tags {
		t = strings.ToLower(cleanText(t))
		if t == "" || slices.Contains(out, t) {
			continue
		}
		if len([]rune(t)) > MaxTagChars {
			return nil, fmt.Errorf("the tag %q is longer than %d characters", t, MaxTagChars)
		}
		out = append(out, t)
	}
	if len(out) > MaxTags {
		return nil, fmt.Errorf("a note takes at most %d tags (got %d)", MaxTags, len(out))
	}
	return out, nil
}

// Draft is a note to remember, before it has an ID.
type Draft struct {
	Scope      Scope
	About      string // see Note.About; a mention (<@U1>, <#C1|x>) is read as its ID
	Text       string
	Tags       []string
	Confidence float64 // 0 means 1 for a note a person asked for
	Source     Source
}

// ErrInvalid wraps the errors of a note a person or the model can fix (scope, subject, length).
var ErrInvalid = errors.New("invalid note")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// normalize checks a draft and returns it cleaned: its subject in stored form, its text on one line.
func (d Draft) normalize() (Draft, error) {
	if !ValidScope(d.Scope) {
		return d, invalidf("scope %q is not one of workspace, channel, person, entity", d.Scope)
	}
	switch d.Scope {
	case Workspace:
		d.About = ""
	case Channel:
		id, ok := ChannelID(d.About)
		if !ok {
			return d, invalidf("a channel note needs the channel's ID (C0123ABCD or <#C0123ABCD>), not %q", d.About)
		}
		d.About = id
	case Person:
		id, ok := UserID(d.About)
		if !ok {
			return d, invalidf("a person note needs the person's Slack ID (U0123ABCD or <@U0123ABCD>), not %q", d.About)
		}
		d.About = id
	case Entity:
		d.About = cleanText(d.About)
		if d.About == "" {
			return d, invalidf("an entity note needs the entity's name (a client, a project), e.g. \"Acme\"")
		}
		if len([]rune(d.About)) > MaxAboutChars {
			return d, invalidf("the entity name is longer than %d characters", MaxAboutChars)
		}
	}
	d.Text = cleanText(d.Text)
	if d.Text == "" {
		return d, invalidf("the note is empty")
	}
	if n := len([]rune(d.Text)); n > MaxNoteChars {
		return d, invalidf("the note is %d characters; keep one fact in at most %d", n, MaxNoteChars)
	}
	tags, err := cleanTags(d.Tags)
	if err != nil {
		return d, invalidf("%v", err)
	}
	d.Tags = tags
	if d.Confidence <= 0 {
		d.Confidence = 1
	}
	if d.Confidence > 1 {
		d.Confidence = 1
	}
	if d.Source.By == "" {
		return d, invalidf("a note needs its source (who said it)")
	}
	return d, nil
}

// words are the lowercased words of a text, for the near-duplicate check.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		out[w] = true
	}
	return out
}

// nearIdentical reports whether two notes say the same thing: the same words but for a few (a
// Jaccard similarity of their word sets of at least 0.8), or one's words all within the other's
// (a restatement with more detail). It decides a merge, never a ranking.
func nearIdentical(a, b string) bool {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wb) == 0 {
		return false
	}
	inter := 0
	for w := range wa {
		if wb[w] {
			inter++
		}
	}
	union := len(wa) + len(wb) - inter
	small := min(len(wa), len(wb))
	return float64(inter)/float64(union) >= 0.8 || (small >= 3 && inter == small)
}
