// Package skills is Lucy's skills capability whole: the Agent Skills format (a folder holding a
// SKILL.md, YAML front matter with name and description, then Markdown instructions, and optional
// files beside it), the three places skills come from, the list the system prompt shows, the
// deterministic match of a request to a skill, and the tools lucy_load_skill and lucy_save_skill.
//
// Sources, a later one overriding an earlier one by name:
//
//  1. platform skills, embedded from prompts/skills/<name>/SKILL.md (package prompts);
//  2. the operator's, in LUCY_DATA_DIR/skills/<name>/SKILL.md;
//  3. a team's, in its workspace at skills/<name>/SKILL.md (the workspace store);
//  4. a person's own, in Lucy's state store: used in her runs only.
//
// Personal by default, team-wide by an admin: a skill a member saves is her own. Only an admin
// (LUCY_ADMIN_USERS) saves a skill for the team, and with it shadows a platform or operator skill
// for the team; a team skill is replaced only by its author or an admin. An approval is given by the
// requester, so it stops injected text but never a member acting on purpose: what reaches other
// people's runs is decided by these rights. A member may not give her own skill the name of a skill
// the team has (see lucy_save_skill): one name means the same instructions whoever asks in a channel.
//
// A team skill steers every later run of the team that matches it, so the model must not be able to
// plant one: the file tools write the workspace without an approval when they create a file, and a web
// page the model read can direct such a write. A team skill is therefore in force only while its
// folder is exactly what a person approved: lucy_save_skill (its approval prompt shows the whole
// SKILL.md and every file beside it) writes the file and records the SHA-256 of the SKILL.md and of
// each file beside it in Lucy's state store, out of the file tools' reach. A SKILL.md or an approved
// file written or changed any other way takes the skill out of force (listed nowhere, refused by
// lucy_load_skill) until it is saved again with an approval; a file added to the folder since is not
// part of the skill (not listed, not read as the skill's).
package skills

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Limits of the format (the Agent Skills specification's) and of what Lucy reads.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
	// MaxSkillBytes bounds a SKILL.md: its instructions go into a prompt or a tool result whole.
	MaxSkillBytes = 64 << 10
	// MaxPerSource bounds the skills read from one source, so that a workspace with thousands of
	// folders cannot make every prompt build slow.
	MaxPerSource = 200
	// MaxFilesListed bounds the files beside a skill that lucy_load_skill names.
	MaxFilesListed = 50
)

// Source says where a skill comes from; a later source overrides an earlier one by name.
type Source int

const (
	Platform Source = iota + 1 // shipped with Lucy: prompts/skills/
	Operator                   // the operator's: LUCY_DATA_DIR/skills/
	Team                       // the team's: skills/ in its workspace
	Personal                   // one person's own, used in her runs only: Lucy's state store
)

func (s Source) String() string {
	switch s {
	case Platform:
		return "platform"
	case Operator:
		return "operator"
	case Team:
		return "team"
	case Personal:
		return "personal"
	}
	return "unknown"
}

// Skill is one parsed skill.
type Skill struct {
	Name        string
	Description string
	// Body is the instructions: the Markdown after the front matter, trimmed.
	Body   string
	Source Source
	// Files are the other files of the skill's folder, relative to it, sorted ("templates/report.md").
	Files []string
	// Hash is the SHA-256 of the SKILL.md as read (hex), what an approval of a team skill records.
	Hash string
	// Author is who saved a team or personal skill (a Slack user ID): a team skill's author may
	// replace it, as may an admin. Empty for platform and operator skills, and for team skills
	// approved before authors were recorded (only an admin may replace those).
	Author string
	// sums are the SHA-256 of a team skill's approved files beside SKILL.md (Files), checked again
	// when one is read.
	sums map[string]string
}

// frontMatter is the YAML header. Only name and description are used; the specification's other
// fields (license, compatibility, metadata, allowed-tools) are accepted and ignored, so that a skill
// written for another agent loads here unchanged.
type frontMatter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// namePattern is the specification's rule: lowercase letters, digits and single hyphens, neither
// first nor last.
var namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidateName checks a skill name; its error says what to change.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("the skill has no name: the front matter needs `name: <lowercase-words-with-hyphens>`")
	case len(name) > MaxNameLen:
		return fmt.Errorf("the skill name %q is %d characters; the limit is %d", name, len(name), MaxNameLen)
	case !namePattern.MatchString(name):
		return fmt.Errorf("the skill name %q may hold only lowercase letters, digits and single hyphens, not at the start or end "+
			"(e.g. \"weekly-report\")", name)
	}
	return nil
}

// ValidateDescription checks a skill description; its error says what to change.
func ValidateDescription(desc string) error {
	switch {
	case strings.TrimSpace(desc) == "":
		return errors.New("the skill has no description: the front matter needs `description:` saying what the skill does " +
			"and when to use it")
	case utf8.RuneCountInString(desc) > MaxDescriptionLen:
		return fmt.Errorf("the description is %d characters; the limit is %d", utf8.RuneCountInString(desc), MaxDescriptionLen)
	}
	return nil
}

// Parse reads a SKILL.md: the front matter between two lines of "---", then the instructions. dir,
// the folder's name, must equal the name (the specification's rule, which also keeps a name unique
// within a source); "" skips that check. Errors say what is wrong in words a person can act on.
func Parse(data []byte, dir string) (Skill, error) {
	if len(data) > MaxSkillBytes {
		return Skill{}, fmt.Errorf("%s is %d bytes; the limit is %d", FileName, len(data), MaxSkillBytes)
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return Skill{}, fmt.Errorf("%s is not UTF-8 text", FileName)
	}
	text := strings.TrimPrefix(string(data), "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return Skill{}, fmt.Errorf("%s must start with YAML front matter: a line \"---\", then `name:` and `description:`, "+
			"then another \"---\"", FileName)
	}
	var header, body string
	if h, b, found := strings.Cut(rest, "\n---\n"); found {
		header, body = h, b
	} else if h, found := strings.CutSuffix(rest, "\n---"); found {
		header = h
	} else {
		return Skill{}, fmt.Errorf("the front matter of %s is not closed by a line \"---\"", FileName)
	}
	var fm frontMatter
	if err := yaml.Unmarshal([]byte(header), &fm); err != nil {
		return Skill{}, fmt.Errorf("the front matter of %s is not valid YAML: %s", FileName, yamlError(err))
	}
	fm.Name, fm.Description = strings.TrimSpace(fm.Name), strings.TrimSpace(fm.Description)
	if err := ValidateName(fm.Name); err != nil {
		return Skill{}, err
	}
	if err := ValidateDescription(fm.Description); err != nil {
		return Skill{}, err
	}
	if dir != "" && dir != fm.Name {
		return Skill{}, fmt.Errorf("the skill is named %q but its folder is %q: they must be the same", fm.Name, dir)
	}
	body = strings.TrimSpace(body)
	if body == "" {
		return Skill{}, fmt.Errorf("%s has no instructions after its front matter", FileName)
	}
	return Skill{Name: fm.Name, Description: fm.Description, Body: body, Hash: Hash(data)}, nil
}

// yamlError is the parser's message without its package prefix.
func yamlError(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// Hash is the hex SHA-256 of a SKILL.md's bytes.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Render writes a SKILL.md from its parts: the front matter through the YAML encoder (so that a
// description with a colon or a quote stays valid), then the instructions. It is pure, so the
// approval prompt (built in workflow code) and the tool that writes the file produce the same bytes.
func Render(name, description, body string) string {
	var b strings.Builder
	b.WriteString("---\n")
	b.WriteString("name: " + name + "\n")
	b.WriteString("description: " + yamlScalar(description) + "\n")
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimSpace(body))
	b.WriteString("\n")
	return b.String()
}

// yamlScalar is s as one YAML scalar: plain when that reads back as the same string, double-quoted
// otherwise, so that Render's output is byte-stable and reads back as the same description.
func yamlScalar(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var back string
	if err := yaml.Unmarshal([]byte("v: "+s), &struct {
		V *string `yaml:"v"`
	}{&back}); err == nil && back == s && !strings.ContainsAny(s, "#'\"") {
		return s
	}
	// A Go quoted string is a valid YAML double-quoted scalar: YAML has every escape strconv.Quote
	// writes (\", \\, \a, \b, \f, \n, \r, \t, \v, \xXX, \uXXXX, \UXXXXXXXX).
	return strconv.Quote(s)
}
