package skills

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/lucy-agent/lucy/slackwire"
)

// Budgets of what skills add to a system prompt, in characters (about four to a token).
const (
	// ListBudget bounds the list of skills (names and descriptions).
	ListBudget = 4000
	// listDescriptionChars cuts each description in the list; lucy_load_skill gives it whole.
	listDescriptionChars = 300
	// LoadedBudget bounds the instructions of the skills a request matched, loaded into the prompt.
	LoadedBudget = 16000
	// MaxMatched is how many skills one request can have loaded directly.
	MaxMatched = 2
)

// ListSection is the system prompt's block that names the skills in force for the requester, within
// ListBudget: her own first, then the team's (the team's own way of working), then the operator's,
// then the platform's; what does not fit is counted, and lucy_load_skill still loads it. "" when
// there are none.
func ListSection(list []Skill) string {
	if len(list) == 0 {
		return ""
	}
	ordered := append([]Skill(nil), list...)
	sort.SliceStable(ordered, func(i, j int) bool {
		if ordered[i].Source != ordered[j].Source {
			return ordered[i].Source > ordered[j].Source
		}
		return ordered[i].Name < ordered[j].Name
	})
	var b strings.Builder
	b.WriteString("# Skills\n\n")
	b.WriteString("Skills are written instructions for tasks done often here. When a request fits one, call " +
		"lucy_load_skill with its name before you start, and follow what it says; read the files beside a skill only with " +
		"lucy_load_skill and its file argument. When someone asks you to remember how something is done (\"remember how " +
		"we do the weekly report\"), write it down with lucy_save_skill. A skill a person saves is their own (personal: " +
		"used in their requests only) unless an admin saves it for the team (for_team); a team skill is changed only by " +
		"whoever saved it or an admin, and a personal skill cannot take the name of a skill the team has.\n")
	head := b.Len()
	for i, s := range ordered {
		line := fmt.Sprintf("- %s (%s): %s\n", s.Name, s.Source, oneLine(s.Description, listDescriptionChars))
		if b.Len()-head+len(line) > ListBudget {
			fmt.Fprintf(&b, "- … and %d more: %s\n", len(ordered)-i, namesOf(ordered[i:], 40))
			break
		}
		b.WriteString(line)
	}
	return strings.TrimSpace(b.String())
}

// LoadedSection is the block of the skills a request matched, loaded whole (within LoadedBudget) so
// that the model follows them from its first turn. "" when none.
func LoadedSection(loaded []Skill) string {
	if len(loaded) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Skills loaded for this request\n\n")
	b.WriteString("This request matches the skills below; follow their instructions (no need to load them again).\n")
	left := LoadedBudget
	for _, s := range loaded {
		body := slackwire.HeadEllipsis(s.Body, max(left, 200))
		fmt.Fprintf(&b, "\n<skill name=%q source=%q>\n%s\n", s.Name, s.Source.String(), body)
		if len(s.Files) > 0 {
			fmt.Fprintf(&b, "\nFiles beside it: %s (%s)\n", strings.Join(s.Files, ", "), readHint(s))
		}
		b.WriteString("</skill>\n")
		left -= len(body)
		if left <= 0 {
			break
		}
	}
	return strings.TrimSpace(b.String())
}

// readHint says how the model reads a file beside a skill: only through lucy_load_skill, which
// checks that a team skill's file is the one a person approved (lucy_read_file reads whatever the
// workspace holds now, including a file written into the folder since).
func readHint(Skill) string {
	return "read them with lucy_load_skill and its file argument"
}

func oneLine(s string, n int) string {
	return slackwire.HeadEllipsis(strings.Join(strings.Fields(s), " "), n)
}

func namesOf(list []Skill, n int) string {
	var names []string
	for i, s := range list {
		if i == n {
			names = append(names, "…")
			break
		}
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// Match returns the skills a request clearly asks for, at most MaxMatched, best first. It is
// deterministic and conservative: a skill is loaded without the model asking only when the request
// names it (its name's words, in order, as in "the weekly report" for weekly-report), or when at
// least minDescriptionHits distinctive words of its description occur in the request and they are at
// least half of the request's own distinctive words. Anything less is left to the model, which sees
// the list and can load a skill itself.
func Match(text string, list []Skill) []Skill {
	words := tokens(text)
	if len(words) == 0 {
		return nil
	}
	reqSet := map[string]bool{}
	var reqDistinct int
	for _, w := range words {
		if !reqSet[w] && distinctive(w) {
			reqDistinct++
		}
		reqSet[w] = true
	}
	type scored struct {
		s     Skill
		score int
	}
	var hits []scored
	for _, s := range list {
		nameWords := strings.Split(s.Name, "-")
		if containsRun(words, stems(nameWords)) && (len(nameWords) > 1 || distinctive(stem(nameWords[0]))) {
			hits = append(hits, scored{s, 1000 + len(nameWords)})
			continue
		}
		seen := map[string]bool{}
		n := 0
		for _, w := range tokens(s.Description) {
			if distinctive(w) && !seen[w] && reqSet[w] {
				n++
			}
			seen[w] = true
		}
		if n >= minDescriptionHits && reqDistinct > 0 && 2*n >= reqDistinct {
			hits = append(hits, scored{s, n})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	var out []Skill
	for i, h := range hits {
		if i == MaxMatched {
			break
		}
		out = append(out, h.s)
	}
	return out
}

// minDescriptionHits is how many distinctive description words a request must share with a skill to
// match it without naming it.
const minDescriptionHits = 3

// tokens are the lowercase words of s, stemmed (stem), in order.
func tokens(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return stems(f)
}

func stems(words []string) []string {
	out := make([]string, 0, len(words))
	for _, w := range words {
		out = append(out, stem(w))
	}
	return out
}

// stem folds the commonest English inflections, so that "reports" meets "report" and "notes" meets
// "note"; it need not be a real stemmer, only the same on both sides.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// containsRun reports whether run occurs in words as consecutive words.
func containsRun(words, run []string) bool {
	if len(run) == 0 {
		return false
	}
outer:
	for i := 0; i+len(run) <= len(words); i++ {
		for j := range run {
			if words[i+j] != run[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

// distinctive words carry meaning: four letters or more and not one of the common words that any
// request or description has.
func distinctive(w string) bool {
	return len(w) >= 4 && !stopWords[w]
}

var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`about after also among and any anything been before being between both but can
		could does doing done each every for from have having her here him his how into its just like make many more most
		much must need only other our out over please same should some such than that the their them then there these they
		this those through under until upon use used using very want was were what when where which while who whom why will
		with within without would you your yours lucy skill skills request asked ask when whenever someone anyone
		thing things able let know help write give tell show`) {
		stopWords[stem(w)] = true
	}
}
