// Package onboarding is Lucy's first contact with a team and with a person: the team's workspace is
// scaffolded once (folders for skills and reports, a README), each person is introduced to Lucy once,
// and each person's time zone from Slack is recorded.
//
// "Once" holds across every worker: a marker object in Lucy's state store per team
// (onboarding/team.json) and per person (onboarding/people/<user>.json), created with a conditional
// write (If-None-Match), so that of two workers that meet a person at the same moment exactly one
// creates the marker and introduces Lucy. A retried attempt of the run that created a marker finds its
// own run ID in it and gets the same answer, so a retry neither loses the introduction nor makes a
// second one.
//
// Nothing here creates a recurring job or posts anything: the run that makes first contact is told to
// introduce itself (Section, in activities.BuildSystemPrompt), and it offers, never creates, recurring work.
package onboarding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"time"

	"github.com/lucy-agent/lucy/workspace"
)

// Where the markers live in the state store, under the team.
const (
	teamMarker = "onboarding/team.json"
	peopleDir  = "onboarding/people"
)

// Contact is one run meeting one person of one team.
type Contact struct {
	Team string
	User string // Slack user ID
	// TZ is the person's time zone as Slack gives it (users.info tz, "Europe/London"); "" if unknown.
	TZ string
	// Run identifies the attempt's run (its workflow ID): a retry of the same run is not a second
	// contact.
	Run string
}

// Result says what was first about a contact.
type Result struct {
	// TeamFirst: this run is Lucy's first contact with the team (its workspace was scaffolded).
	TeamFirst bool
	// PersonFirst: this run is Lucy's first contact with the person: she introduces herself.
	PersonFirst bool
	// TZ is the person's time zone as recorded (the contact's, or an earlier one when Slack gave none
	// this time).
	TZ string
}

// Onboarder records first contacts.
type Onboarder struct {
	state     workspace.Store // markers
	workspace workspace.Store // the teams' files: scaffolded on a team's first contact; nil: none
	now       func() time.Time
	met       func(ctx context.Context, team, user string) (bool, error)
}

// MetBefore gives the Onboarder a way to tell whether Lucy worked for a person before markers
// existed (the worker asks Temporal's visibility for a completed run of theirs): such a person gets
// a marker and no introduction, so a team that upgrades is not greeted by Lucy once per person. A
// failed lookup counts as met: an introduction missed is better than one repeated.
func (o *Onboarder) MetBefore(met func(ctx context.Context, team, user string) (bool, error)) *Onboarder {
	o.met = met
	return o
}

// New returns an Onboarder over Lucy's state store and the teams' workspace store. now is time.Now
// when nil.
func New(state, ws workspace.Store, now func() time.Time) *Onboarder {
	if now == nil {
		now = time.Now
	}
	return &Onboarder{state: state, workspace: ws, now: now}
}

// teamRecord is the team's marker.
type teamRecord struct {
	At  time.Time `json:"at"`
	Run string    `json:"run"`
	By  string    `json:"by,omitempty"` // the first person
}

// personRecord is a person's marker, and where their time zone is kept.
type personRecord struct {
	User string    `json:"user"`
	At   time.Time `json:"at"`
	Run  string    `json:"run"`
	TZ   string    `json:"tz,omitempty"`
	// TZUpdated is when TZ was last changed (a person who travels and changes it in Slack).
	TZUpdated time.Time `json:"tzUpdated,omitzero"`
}

// slackUser is the shape of the user IDs that name a person's marker.
var slackUser = regexp.MustCompile(`^[UW][A-Z0-9]{1,30}$`)

// FirstContact records the contact and says what was first about it. The team's marker is made
// before the person's, and the workspace is scaffolded when the team's is new, so a team's first
// person finds the folders there.
func (o *Onboarder) FirstContact(ctx context.Context, c Contact) (Result, error) {
	if !workspace.ValidTeam(c.Team) {
		return Result{}, fmt.Errorf("onboarding: invalid team ID %q", c.Team)
	}
	var res Result
	teamFirst, err := o.claim(ctx, c.Team, teamMarker, c.Run, teamRecord{At: o.now().UTC(), Run: c.Run, By: c.User})
	if err != nil {
		return Result{}, fmt.Errorf("onboarding: team marker: %w", err)
	}
	res.TeamFirst = teamFirst
	if teamFirst && o.workspace != nil {
		if err := Scaffold(ctx, o.workspace, c.Team); err != nil {
			return Result{}, fmt.Errorf("onboarding: scaffold the workspace: %w", err)
		}
	}
	if !slackUser.MatchString(c.User) {
		return res, nil // no person (a scheduled firing, a test): nobody to introduce
	}
	rel := path.Join(peopleDir, c.User+".json")
	now := o.now().UTC()
	rec := personRecord{User: c.User, At: now, Run: c.Run, TZ: c.TZ}
	if c.TZ != "" {
		rec.TZUpdated = now
	}
	first, err := o.claim(ctx, c.Team, rel, c.Run, rec)
	if err != nil {
		return Result{}, fmt.Errorf("onboarding: person marker: %w", err)
	}
	if first && o.met != nil {
		if met, err := o.met(ctx, c.Team, c.User); err != nil || met {
			first = false
		}
	}
	res.PersonFirst, res.TZ = first, c.TZ
	if !first {
		res.TZ, err = o.updateTZ(ctx, c.Team, rel, c.TZ, now)
		if err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// claim creates the marker rel unless it exists; it reports whether this run holds it (created it
// now, or in an earlier attempt of the same run).
func (o *Onboarder) claim(ctx context.Context, team, rel, run string, rec any) (bool, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	_, err = o.state.Write(ctx, team, rel, data, workspace.Cond{IfNoneMatch: true})
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, workspace.ErrPrecondition) && !errors.Is(err, fs.ErrExist) {
		return false, err
	}
	// Another run (on any worker) made it first, or this run did in an attempt that failed later.
	cur, _, err := o.state.Read(ctx, team, rel)
	if err != nil {
		return false, err
	}
	var held struct {
		Run string `json:"run"`
	}
	if err := json.Unmarshal(cur, &held); err != nil {
		return false, fmt.Errorf("%s is not a marker: %w", rel, err)
	}
	return run != "" && held.Run == run, nil
}

// updateTZ records a person's new time zone, and returns the one recorded: tz, or the earlier one
// when Slack gave none this time. A lost race with another worker recording the same person is
// harmless: both write what Slack said.
func (o *Onboarder) updateTZ(ctx context.Context, team, rel, tz string, now time.Time) (string, error) {
	data, info, err := o.state.Read(ctx, team, rel)
	if err != nil {
		return tz, fmt.Errorf("onboarding: read %s: %w", rel, err)
	}
	var rec personRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return tz, fmt.Errorf("onboarding: %s is not a marker: %w", rel, err)
	}
	if tz == "" || tz == rec.TZ {
		return rec.TZ, nil
	}
	rec.TZ, rec.TZUpdated = tz, now
	out, err := json.Marshal(rec)
	if err != nil {
		return tz, err
	}
	if _, err := o.state.Write(ctx, team, rel, out, workspace.Cond{IfMatch: info.ETag}); err != nil && !errors.Is(err, workspace.ErrPrecondition) {
		return tz, fmt.Errorf("onboarding: record the time zone: %w", err)
	}
	return tz, nil
}

// TZ returns the time zone recorded for a person, "" when none is.
func (o *Onboarder) TZ(ctx context.Context, team, user string) (string, error) {
	if !workspace.ValidTeam(team) || !slackUser.MatchString(user) {
		return "", nil
	}
	data, _, err := o.state.Read(ctx, team, path.Join(peopleDir, user+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var rec personRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return "", err
	}
	return rec.TZ, nil
}

// The scaffold of a team's workspace: a README at its root and one in each folder Lucy keeps things
// in (a store of objects has no empty folders, so a folder exists by its README).
var scaffold = []struct{ path, content string }{
	{"README.md", `# This workspace

Lucy's files for this Slack workspace. Lucy reads and writes them with her file tools, and people can ask
her to list, read or share any of them.

- ` + "`skills/`" + `: the team's skills, one folder each with a SKILL.md (instructions for a task the team
  does often), saved here by an admin. Ask Lucy to "remember how we do …" and she saves it, with your
  approval, as your own skill (used in your requests only) unless an admin saves it for the team.
- ` + "`reports/`" + `: reports Lucy writes (weekly reports, research briefs) when asked to keep a copy.
`},
	{"skills/README.md", `# Team skills

Each skill is a folder here with a SKILL.md: YAML front matter with ` + "`name`" + ` (lowercase words with
hyphens, the folder's name) and ` + "`description`" + ` (what it does and when to use it), then the
instructions in Markdown. Files beside SKILL.md (templates, examples) are read when the skill asks.

A skill someone asks Lucy to save ("remember how we do the weekly report") is theirs, used in their
requests only; an admin saves skills for the team, here, and only whoever saved a team skill or an
admin may change it. A team skill is used only as a person approved it: the approval shows the whole
SKILL.md and every file of its folder. A SKILL.md or one of those files written or changed any other way
takes the skill out of use until it is saved again with an approval, and a file added to the folder
since is not part of the skill.

Lucy also has built-in skills (weekly-report, meeting-action-items, research-brief); a team skill an
admin saves with the same name replaces the built-in one for this team.
`},
	{"reports/README.md", `# Reports

Reports Lucy keeps for this team, named ` + "`<topic>-<YYYY-MM-DD>.md`" + `.
`},
}

// Scaffold creates the team's workspace folders and READMEs. It never replaces a file: a README a
// person edited stays as it is.
func Scaffold(ctx context.Context, ws workspace.Store, team string) error {
	for _, f := range scaffold {
		_, err := ws.Write(ctx, team, f.path, []byte(f.content), workspace.Cond{IfNoneMatch: true})
		if err != nil && !errors.Is(err, workspace.ErrPrecondition) && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", f.path, err)
		}
	}
	return nil
}
