package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/workspace"
)

// TeamDir is the folder of a team's skills in its workspace: skills/<name>/SKILL.md.
const TeamDir = "skills"

// approvalDir is the folder of the approvals of a team's skills in Lucy's state store:
// skills/<name>.json, each the SHA-256 of the SKILL.md a person approved.
const approvalDir = "skills"

// Catalog reads the skills of every source. It keeps nothing between calls but the platform's
// skills, which are compiled in: every worker reads the same stores, so a skill saved on one worker
// is in force on all of them at the next prompt.
type Catalog struct {
	platform fs.FS // the folders of the platform skills (prompts/skills); nil: none
	operator fs.FS // LUCY_DATA_DIR/skills; nil: none
	// workspace is the teams' files (team skills); state is Lucy's own store (their approvals). A
	// nil workspace means no team skills; a nil state, that none can be in force or saved.
	workspace workspace.Store
	state     workspace.Store
	log       zerolog.Logger
	now       func() time.Time

	// The platform's skills, read and parsed at the first call (every prompt and every routing
	// lists the skills: parsing the same compiled-in files each time was a tenth of what a
	// conversation's activities allocated). List hands out copies.
	platformOnce     sync.Once
	platformSkills   []Skill
	platformProblems []Problem
	platformErr      error
}

// Deps are where a Catalog reads.
type Deps struct {
	Platform  fs.FS // a folder per skill at its root
	Operator  fs.FS
	Workspace workspace.Store
	State     workspace.Store
	Log       zerolog.Logger
	Now       func() time.Time // time.Now when nil
}

// New returns the catalog over d.
func New(d Deps) *Catalog {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Catalog{platform: d.Platform, operator: d.Operator, workspace: d.Workspace, state: d.State, log: d.Log, now: d.Now}
}

// Problem is a skill folder that could not be read as a skill, with why: it is left out of the list,
// and lucy_load_skill answers its name with this.
type Problem struct {
	Name   string // the folder's name
	Source Source
	Err    error
}

// ErrNotApproved is a team SKILL.md that is not the one a person approved (written by a file tool or
// a script, or changed since): not in force.
var ErrNotApproved = errors.New("this SKILL.md was written or changed without a person's approval, so it is not in force; " +
	"save it with lucy_save_skill, which asks for that approval")

// List returns the skills in force for team, one per name (a team's overriding an operator's
// overriding a platform's), sorted by name, and the folders that are not valid skills. A source that
// cannot be read at all is logged and skipped: the others still count.
func (c *Catalog) List(ctx context.Context, team string) ([]Skill, []Problem) {
	byName := map[string]Skill{}
	var problems []Problem
	for _, src := range []Source{Platform, Operator, Team} {
		got, probs, err := c.read(ctx, src, team)
		if err != nil {
			c.log.Warn().Err(err).Str("team", team).Str("source", src.String()).Msg("skills: a source could not be read; its skills are left out")
			continue
		}
		for _, s := range got {
			byName[s.Name] = s
		}
		problems = append(problems, probs...)
	}
	out := make([]Skill, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, problems
}

// Get returns the skill in force under name, or an error that says why there is none (no such skill,
// an invalid SKILL.md, a team skill not approved), naming the ones there are.
func (c *Catalog) Get(ctx context.Context, team, name string) (Skill, error) {
	if err := ValidateName(name); err != nil {
		return Skill{}, err
	}
	list, problems := c.List(ctx, team)
	for _, s := range list {
		if s.Name == name {
			return s, nil
		}
	}
	for i := len(problems) - 1; i >= 0; i-- { // the last source's word first
		if p := problems[i]; p.Name == name {
			return Skill{}, fmt.Errorf("the %s skill %q cannot be used: %w", p.Source, name, p.Err)
		}
	}
	names := make([]string, 0, len(list))
	for _, s := range list {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return Skill{}, fmt.Errorf("there is no skill %q, and no skills are available", name)
	}
	return Skill{}, fmt.Errorf("there is no skill %q; the skills are: %s", name, strings.Join(names, ", "))
}

// read returns the skills of one source.
func (c *Catalog) read(ctx context.Context, src Source, team string) ([]Skill, []Problem, error) {
	switch src {
	case Platform:
		c.platformOnce.Do(func() { c.platformSkills, c.platformProblems, c.platformErr = readFS(c.platform, src) })
		out := make([]Skill, len(c.platformSkills))
		for i, s := range c.platformSkills {
			s.Files = slices.Clone(s.Files)
			out[i] = s
		}
		return out, slices.Clone(c.platformProblems), c.platformErr
	case Operator:
		return readFS(c.operator, src)
	case Team:
		return c.readTeam(ctx, team)
	}
	return nil, nil, nil
}

// readFS reads the skills of a folder tree: <name>/SKILL.md and the files beside it.
func readFS(fsys fs.FS, src Source) ([]Skill, []Problem, error) {
	if fsys == nil {
		return nil, nil, nil
	}
	entries, err := fs.ReadDir(fsys, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil // the operator has no skills folder: none
	}
	if err != nil {
		return nil, nil, err
	}
	var out []Skill
	var problems []Problem
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if len(out)+len(problems) >= MaxPerSource {
			break
		}
		dir := e.Name()
		data, err := fs.ReadFile(fsys, path.Join(dir, FileName))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a folder without SKILL.md is not a skill (a shared templates folder, say)
		}
		if err != nil {
			problems = append(problems, Problem{Name: dir, Source: src, Err: err})
			continue
		}
		s, err := Parse(data, dir)
		if err != nil {
			problems = append(problems, Problem{Name: dir, Source: src, Err: err})
			continue
		}
		s.Source = src
		_ = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || p == path.Join(dir, FileName) || len(s.Files) >= MaxFilesListed {
				return nil
			}
			s.Files = append(s.Files, strings.TrimPrefix(p, dir+"/"))
			return nil
		})
		out = append(out, s)
	}
	return out, problems, nil
}

// readTeam reads a team's skills from its workspace, each in force only if its approval matches.
func (c *Catalog) readTeam(ctx context.Context, team string) ([]Skill, []Problem, error) {
	if c.workspace == nil || team == "" || !workspace.ValidTeam(team) {
		return nil, nil, nil
	}
	files, err := c.workspace.List(ctx, team, TeamDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	beside := map[string][]string{} // skill folder -> its other files
	var dirs []string
	for _, f := range files {
		rest, ok := strings.CutPrefix(f.Path, TeamDir+"/")
		if !ok {
			continue
		}
		dir, file, ok := strings.Cut(rest, "/")
		if !ok {
			continue // a file directly in skills/ (its README) is not a skill
		}
		if file == FileName {
			dirs = append(dirs, dir)
		} else if len(beside[dir]) < MaxFilesListed {
			beside[dir] = append(beside[dir], file)
		}
	}
	sort.Strings(dirs)
	var out []Skill
	var problems []Problem
	for _, dir := range dirs {
		if len(out)+len(problems) >= MaxPerSource {
			break
		}
		data, _, err := c.workspace.Read(ctx, team, path.Join(TeamDir, dir, FileName))
		if err != nil {
			problems = append(problems, Problem{Name: dir, Source: Team, Err: err})
			continue
		}
		s, err := Parse(data, dir)
		if err != nil {
			problems = append(problems, Problem{Name: dir, Source: Team, Err: err})
			continue
		}
		s.Source, s.Files = Team, beside[dir]
		if ok, err := c.approved(ctx, team, s.Name, s.Hash); err != nil {
			problems = append(problems, Problem{Name: dir, Source: Team, Err: fmt.Errorf("its approval could not be read: %w", err)})
			continue
		} else if !ok {
			problems = append(problems, Problem{Name: dir, Source: Team, Err: ErrNotApproved})
			continue
		}
		out = append(out, s)
	}
	return out, problems, nil
}

// approval is the record of a team skill a person approved, in Lucy's state store.
type approval struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	// By is who asked for the skill (the run's requester); the approver's click is in the run's
	// history. Run is the agent run that saved it.
	By  string    `json:"by,omitempty"`
	Run string    `json:"run,omitempty"`
	At  time.Time `json:"at"`
}

func approvalPath(name string) string { return path.Join(approvalDir, name+".json") }

// approved reports whether hash is the approved version of the team's skill name.
func (c *Catalog) approved(ctx context.Context, team, name, hash string) (bool, error) {
	if c.state == nil {
		return false, nil
	}
	data, _, err := c.state.Read(ctx, team, approvalPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var a approval
	if err := json.Unmarshal(data, &a); err != nil {
		return false, fmt.Errorf("approval record of skill %s: %w", name, err)
	}
	return a.SHA256 == hash, nil
}

// Shadowed returns the source of the skill a team skill named name would override (Platform or
// Operator), or 0 when it would override none.
func (c *Catalog) Shadowed(name string) Source {
	var src Source
	for _, s := range []struct {
		fsys fs.FS
		src  Source
	}{{c.platform, Platform}, {c.operator, Operator}} {
		if s.fsys == nil {
			continue
		}
		if _, err := fs.Stat(s.fsys, path.Join(name, FileName)); err == nil {
			src = s.src
		}
	}
	return src
}

// Save writes a team skill that a person approved: the approval record first, then the SKILL.md, so
// that a failure in between leaves either nothing in force or the previous version with a record
// that no longer matches (not in force): never a file in force that nobody approved. data must parse
// (Parse) under name.
func (c *Catalog) Save(ctx context.Context, team, name string, data []byte, by, run string) error {
	if c.workspace == nil {
		return errors.New("skills: this worker has no workspace store")
	}
	if c.state == nil {
		return errors.New("skills: this worker has no state store, where approvals of team skills are kept")
	}
	if _, err := Parse(data, name); err != nil {
		return err
	}
	rec, err := json.Marshal(approval{Name: name, SHA256: Hash(data), By: by, Run: run, At: c.now().UTC()})
	if err != nil {
		return err
	}
	if _, err := c.state.Write(ctx, team, approvalPath(name), rec, workspace.Cond{}); err != nil {
		return fmt.Errorf("record the approval of skill %s: %w", name, err)
	}
	if _, err := c.workspace.Write(ctx, team, path.Join(TeamDir, name, FileName), data, workspace.Cond{}); err != nil {
		return fmt.Errorf("write skill %s: %w", name, err)
	}
	return nil
}

// ReadFile reads a file beside a skill: rel is relative to the skill's folder. Team skills' files
// are in the workspace (lucy_read_file reads them too); platform and operator skills' files can be
// read only this way.
func (c *Catalog) ReadFile(ctx context.Context, team string, s Skill, rel string) ([]byte, error) {
	rel = path.Clean(strings.TrimPrefix(rel, "./"))
	if rel == "." || rel == FileName || strings.HasPrefix(rel, "../") || rel == ".." || strings.HasPrefix(rel, "/") {
		return nil, fmt.Errorf("%q is not a file beside the skill; the files are: %s", rel, filesList(s.Files))
	}
	found := false
	for _, f := range s.Files {
		if f == rel {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("the skill %s has no file %q; its files are: %s", s.Name, rel, filesList(s.Files))
	}
	switch s.Source {
	case Platform:
		return fs.ReadFile(c.platform, path.Join(s.Name, rel))
	case Operator:
		return fs.ReadFile(c.operator, path.Join(s.Name, rel))
	case Team:
		data, _, err := c.workspace.Read(ctx, team, path.Join(TeamDir, s.Name, rel))
		return data, err
	}
	return nil, errors.New("skills: unknown source")
}

func filesList(files []string) string {
	if len(files) == 0 {
		return "(none)"
	}
	return strings.Join(files, ", ")
}
