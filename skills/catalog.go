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
// skills/<name>.json, each the SHA-256 of the SKILL.md a person approved and of every file beside
// it that was part of what they approved.
const approvalDir = "skills"

// personalDir is the folder of each person's own skills in Lucy's state store:
// skills/people/<user>/<name>.json, each holding the SKILL.md itself. A personal skill is kept out of
// the workspace: the file tools (and so a page the model read) can neither change nor remove it,
// and the team's files do not fill up with one person's habits.
const personalDir = "skills/people"

// Bounds of what a team skill's approval covers beside its SKILL.md: every file of the folder is
// shown in the approval prompt and read again at every prompt build to check it is unchanged.
const (
	MaxFilesBeside = MaxFilesListed
	MaxBesideBytes = 64 << 10 // shown whole in the approval prompt, within what Slack messages of one prompt hold
)

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
	// admins (LUCY_ADMIN_USERS) may save skills for the whole team and change any team skill.
	admins []string
	log    zerolog.Logger
	now    func() time.Time

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
	// Admins (LUCY_ADMIN_USERS) may save a skill for the whole team, replace any team skill and
	// shadow a platform or operator skill for the team; anyone else's skills are her own.
	Admins []string
	Log    zerolog.Logger
	Now    func() time.Time // time.Now when nil
}

// New returns the catalog over d.
func New(d Deps) *Catalog {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Catalog{platform: d.Platform, operator: d.Operator, workspace: d.Workspace, state: d.State, admins: d.Admins,
		log: d.Log, now: d.Now}
}

// IsAdmin reports whether user is in LUCY_ADMIN_USERS.
func (c *Catalog) IsAdmin(user string) bool { return user != "" && slices.Contains(c.admins, user) }

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

// filesChanged is the problem of a team skill one of whose approved files beside SKILL.md was
// changed or removed since: the skill is not in force, as if its SKILL.md had changed, because its
// instructions may send the model to that file.
func filesChanged(rel string) error {
	return fmt.Errorf("its file %s was changed or removed since the skill was approved, so the skill is not in force; "+
		"save it again with lucy_save_skill, whose approval shows the files of its folder", rel)
}

// List returns the skills in force for user's runs in team, one per name (her own overriding the
// team's overriding an operator's overriding a platform's), sorted by name, and the folders that are
// not valid skills. Another person's own skills are never listed; user "" lists what the team shares
// only. A source that cannot be read at all is logged and skipped: the others still count.
func (c *Catalog) List(ctx context.Context, team, user string) ([]Skill, []Problem) {
	byName := map[string]Skill{}
	var problems []Problem
	for _, src := range []Source{Platform, Operator, Team, Personal} {
		got, probs, err := c.read(ctx, src, team, user)
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

// Get returns the skill in force under name for user's runs, or an error that says why there is none
// (no such skill, an invalid SKILL.md, a team skill not approved), naming the ones there are.
func (c *Catalog) Get(ctx context.Context, team, user, name string) (Skill, error) {
	if err := ValidateName(name); err != nil {
		return Skill{}, err
	}
	list, problems := c.List(ctx, team, user)
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
func (c *Catalog) read(ctx context.Context, src Source, team, user string) ([]Skill, []Problem, error) {
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
	case Personal:
		return c.readPersonal(ctx, team, user)
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

// readTeam reads a team's skills from its workspace, each in force only if its approval matches:
// its SKILL.md and every file beside it that the approval covers are what the person approved. A
// file written into the folder since (a file tool creates files without an approval) is not part of
// the skill: it is neither listed nor read as the skill's.
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
	var dirs []string
	for _, f := range files {
		rest, ok := strings.CutPrefix(f.Path, TeamDir+"/")
		if !ok {
			continue
		}
		if dir, file, ok := strings.Cut(rest, "/"); ok && file == FileName {
			dirs = append(dirs, dir) // a file directly in skills/ (its README) is not a skill
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
		s.Source = Team
		rec, found, err := c.record(ctx, team, s.Name)
		if err != nil {
			problems = append(problems, Problem{Name: dir, Source: Team, Err: fmt.Errorf("its approval could not be read: %w", err)})
			continue
		}
		if !found || rec.SHA256 != s.Hash {
			problems = append(problems, Problem{Name: dir, Source: Team, Err: ErrNotApproved})
			continue
		}
		if rel, err := c.changedFile(ctx, team, s.Name, rec.Files); err != nil {
			problems = append(problems, Problem{Name: dir, Source: Team, Err: fmt.Errorf("its file %s could not be read: %w", rel, err)})
			continue
		} else if rel != "" {
			problems = append(problems, Problem{Name: dir, Source: Team, Err: filesChanged(rel)})
			continue
		}
		s.Author, s.sums = rec.By, rec.Files
		for rel := range rec.Files {
			s.Files = append(s.Files, rel)
		}
		sort.Strings(s.Files)
		out = append(out, s)
	}
	return out, problems, nil
}

// changedFile returns the first of the approved files beside a team skill (relative path -> SHA-256)
// that is missing or differs from what was approved, "" when none.
func (c *Catalog) changedFile(ctx context.Context, team, name string, sums map[string]string) (string, error) {
	rels := make([]string, 0, len(sums))
	for rel := range sums {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		data, _, err := c.workspace.Read(ctx, team, path.Join(TeamDir, name, rel))
		if errors.Is(err, fs.ErrNotExist) {
			return rel, nil
		}
		if err != nil {
			return rel, err
		}
		if Hash(data) != sums[rel] {
			return rel, nil
		}
	}
	return "", nil
}

// approval is the record of a team skill a person approved, in Lucy's state store.
type approval struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"` // of the SKILL.md
	// Files are the other files of the skill's folder the person approved with it: path relative to
	// the folder -> SHA-256. Records written before files were covered have none: no file beside
	// such a skill is read as the skill's until it is saved again.
	Files map[string]string `json:"files,omitempty"`
	// Folder is FolderHash of the whole approved folder, for the record: what the approval covered.
	Folder string `json:"folder,omitempty"`
	// By is who asked for the skill (the run's requester): its author, who may replace it, as may an
	// admin. The approver's click is in the run's history. Run is the agent run that saved it.
	By  string    `json:"by,omitempty"`
	Run string    `json:"run,omitempty"`
	At  time.Time `json:"at"`
}

func approvalPath(name string) string { return path.Join(approvalDir, name+".json") }

// record reads the approval of the team's skill name; found is false when there is none.
func (c *Catalog) record(ctx context.Context, team, name string) (approval, bool, error) {
	if c.state == nil {
		return approval{}, false, nil
	}
	data, _, err := c.state.Read(ctx, team, approvalPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return approval{}, false, nil
	}
	if err != nil {
		return approval{}, false, err
	}
	var a approval
	if err := json.Unmarshal(data, &a); err != nil {
		return approval{}, false, fmt.Errorf("approval record of skill %s: %w", name, err)
	}
	return a, true, nil
}

// FolderHash is the SHA-256 (hex) of a skill folder: its SKILL.md's hash and every other file's
// path and content hash (files: relative path -> SHA-256), so that an approval covers the folder
// whole: adding, removing, renaming or changing any file changes it.
func FolderHash(skillHash string, files map[string]string) string {
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	var b strings.Builder
	b.WriteString(FileName + "\x00" + skillHash + "\n")
	for _, rel := range rels {
		b.WriteString(rel + "\x00" + files[rel] + "\n")
	}
	return Hash([]byte(b.String()))
}

// besideFile is a file of a team skill's folder other than SKILL.md, as a save found it.
type besideFile struct {
	Rel  string
	Data []byte
}

// besideFiles reads the files of a team skill's folder other than SKILL.md, sorted by path: what a
// save's approval covers with the SKILL.md. A folder with more than MaxFilesBeside files or
// MaxBesideBytes of them is refused: the approval shows them all.
func (c *Catalog) besideFiles(ctx context.Context, team, name string) ([]besideFile, error) {
	dir := path.Join(TeamDir, name)
	infos, err := c.workspace.List(ctx, team, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []besideFile
	total := 0
	for _, f := range infos {
		rel, ok := strings.CutPrefix(f.Path, dir+"/")
		if !ok || rel == FileName {
			continue
		}
		if len(out) == MaxFilesBeside {
			return nil, userError{fmt.Errorf("the folder %s holds more than %d files beside %s; a skill's approval shows every "+
				"file of its folder, so move the others elsewhere first", dir, MaxFilesBeside, FileName)}
		}
		data, _, err := c.workspace.Read(ctx, team, f.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while we listed
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f.Path, err)
		}
		if total += len(data); total > MaxBesideBytes {
			return nil, userError{fmt.Errorf("the files beside %s in %s are more than %d KB; a skill's approval shows every "+
				"file of its folder, so move the large ones elsewhere first", FileName, dir, MaxBesideBytes>>10)}
		}
		out = append(out, besideFile{Rel: rel, Data: data})
	}
	return out, nil
}

// userError is a save refused for a reason the person can act on (too many files in the folder).
type userError struct{ error }

func sumsOf(files []besideFile) map[string]string {
	if len(files) == 0 {
		return nil
	}
	out := make(map[string]string, len(files))
	for _, f := range files {
		out[f.Rel] = Hash(f.Data)
	}
	return out
}

// personalRecord is a person's own skill, in Lucy's state store: the SKILL.md itself.
type personalRecord struct {
	Name    string    `json:"name"`
	Content string    `json:"content"` // the SKILL.md
	By      string    `json:"by"`
	Run     string    `json:"run,omitempty"`
	At      time.Time `json:"at"`
}

// validUser is a Slack user ID as a path element of the state store: nothing else may reach it.
func validUser(user string) bool {
	if user == "" || len(user) > 64 {
		return false
	}
	for _, r := range user {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func personalPath(user, name string) string { return path.Join(personalDir, user, name+".json") }

// readPersonal reads user's own skills; none for another person, and none without a user.
func (c *Catalog) readPersonal(ctx context.Context, team, user string) ([]Skill, []Problem, error) {
	if c.state == nil || team == "" || !workspace.ValidTeam(team) || !validUser(user) {
		return nil, nil, nil
	}
	dir := path.Join(personalDir, user)
	infos, err := c.state.List(ctx, team, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var out []Skill
	var problems []Problem
	for _, f := range infos {
		file, ok := strings.CutPrefix(f.Path, dir+"/")
		name, isJSON := strings.CutSuffix(file, ".json")
		if !ok || !isJSON || strings.Contains(name, "/") {
			continue
		}
		if len(out)+len(problems) >= MaxPerSource {
			break
		}
		rec, found, err := c.personal(ctx, team, user, name)
		if err == nil && !found {
			continue // removed while we listed
		}
		var s Skill
		if err == nil {
			s, err = Parse([]byte(rec.Content), name)
		}
		if err != nil {
			problems = append(problems, Problem{Name: name, Source: Personal, Err: err})
			continue
		}
		s.Source, s.Author = Personal, user
		out = append(out, s)
	}
	return out, problems, nil
}

// personal reads user's own skill name; found is false when she has none of that name.
func (c *Catalog) personal(ctx context.Context, team, user, name string) (personalRecord, bool, error) {
	if c.state == nil || !validUser(user) {
		return personalRecord{}, false, nil
	}
	data, _, err := c.state.Read(ctx, team, personalPath(user, name))
	if errors.Is(err, fs.ErrNotExist) {
		return personalRecord{}, false, nil
	}
	if err != nil {
		return personalRecord{}, false, err
	}
	var rec personalRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return personalRecord{}, false, fmt.Errorf("personal skill %s: %w", name, err)
	}
	return rec, true, nil
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

// Save writes a team skill that a person approved, covering the files of its folder as they are
// now. It is what the tool does after the approval, for callers without an approval step (tests, a
// command an operator runs). data must parse (Parse) under name.
func (c *Catalog) Save(ctx context.Context, team, name string, data []byte, by, run string) error {
	if c.workspace == nil {
		return errors.New("skills: this worker has no workspace store")
	}
	files, err := c.besideFiles(ctx, team, name)
	if err != nil {
		return err
	}
	return c.saveTeam(ctx, team, name, data, sumsOf(files), by, run)
}

// saveTeam writes a team skill that a person approved with the files beside it (files: relative path
// -> SHA-256, as shown to them): the approval record first, then the SKILL.md, so that a failure in
// between leaves either nothing in force or the previous version with a record that no longer
// matches (not in force): never a file in force that nobody approved.
func (c *Catalog) saveTeam(ctx context.Context, team, name string, data []byte, files map[string]string, by, run string) error {
	if c.workspace == nil {
		return errors.New("skills: this worker has no workspace store")
	}
	if c.state == nil {
		return errors.New("skills: this worker has no state store, where approvals of team skills are kept")
	}
	if _, err := Parse(data, name); err != nil {
		return err
	}
	rec, err := json.Marshal(approval{Name: name, SHA256: Hash(data), Files: files, Folder: FolderHash(Hash(data), files),
		By: by, Run: run, At: c.now().UTC()})
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

// SavePersonal writes user's own skill: used in her runs only. data must parse (Parse) under name.
func (c *Catalog) SavePersonal(ctx context.Context, team, user, name string, data []byte, run string) error {
	if c.state == nil {
		return errors.New("skills: this worker has no state store, where personal skills are kept")
	}
	if !validUser(user) {
		return fmt.Errorf("skills: %q is not a person a skill can be saved for", user)
	}
	if _, err := Parse(data, name); err != nil {
		return err
	}
	rec, err := json.Marshal(personalRecord{Name: name, Content: string(data), By: user, Run: run, At: c.now().UTC()})
	if err != nil {
		return err
	}
	if _, err := c.state.Write(ctx, team, personalPath(user, name), rec, workspace.Cond{}); err != nil {
		return fmt.Errorf("save skill %s: %w", name, err)
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
		if s.Source == Team && c.workspace != nil {
			if _, err := c.workspace.Stat(ctx, team, path.Join(TeamDir, s.Name, rel)); err == nil {
				return nil, fmt.Errorf("%s is in the folder of the team skill %s but is not part of the skill: it was not in "+
					"the folder when a person approved the skill, so it is not read as the skill's instructions. Its approved "+
					"files are: %s. To make it part of the skill, save the skill again with lucy_save_skill, whose approval "+
					"shows every file of the folder", rel, s.Name, filesList(s.Files))
			}
		}
		return nil, fmt.Errorf("the skill %s has no file %q; its files are: %s", s.Name, rel, filesList(s.Files))
	}
	switch s.Source {
	case Platform:
		return fs.ReadFile(c.platform, path.Join(s.Name, rel))
	case Operator:
		return fs.ReadFile(c.operator, path.Join(s.Name, rel))
	case Team:
		// Read again since the list was made: it must still be the approved content.
		data, _, err := c.workspace.Read(ctx, team, path.Join(TeamDir, s.Name, rel))
		if errors.Is(err, fs.ErrNotExist) || err == nil && Hash(data) != s.sums[rel] {
			return nil, filesChanged(rel)
		}
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
