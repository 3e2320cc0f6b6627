package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// schemaKeywords are the JSON Schema keywords checkValue understands; a schema using another one
// would be described to the model but not enforced.
var schemaKeywords = map[string]bool{
	"type": true, "description": true, "properties": true, "required": true, "additionalProperties": true,
	"enum": true, "items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "minProperties": true,
}

func TestCatalogueInvariants(t *testing.T) {
	names := Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names() is not sorted: %v", names)
	}
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("Names() has duplicates: %v", names)
	}
	wantBuiltins := []string{AppendRunJournalEntry, AskHuman, DelegateCode, DelegateDocument, DelegateIntegrations, DelegateResearch, GetRunJournal, UpdateRunJournal}
	var builtins []string
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, ok := Lookup(name)
			if !ok {
				t.Fatalf("Lookup(%q) = false", name)
			}
			if s.Name != name {
				t.Errorf("Lookup(%q).Name = %q", name, s.Name)
			}
			if s.Description == "" || s.Human == "" {
				t.Errorf("description %q, human %q: both must be set", s.Description, s.Human)
			}
			if s.Human != strings.ToLower(s.Human[:1])+s.Human[1:] || !strings.HasSuffix(strings.Fields(s.Human)[0], "ing") {
				t.Errorf("Human = %q, want a lower-case gerund phrase like \"reading a web page\"", s.Human)
			}
			if s.Destructive && s.Idempotent {
				t.Errorf("destructive tool is marked idempotent: it would be retried")
			}
			if s.Destructive && s.Builtin {
				t.Errorf("destructive tool is builtin: the approval gate guards activities")
			}
			if s.Builtin {
				builtins = append(builtins, name)
			} else if !strings.HasPrefix(name, "lucy_") {
				t.Errorf("activity tool %q does not start with lucy_", name)
			}
			checkObjectSchema(t, s.Parameters)
		})
	}
	if !slices.Equal(builtins, wantBuiltins) {
		t.Errorf("builtins = %v, want %v", builtins, wantBuiltins)
	}

	def := DefaultSet()
	if !slices.IsSorted(def) {
		t.Errorf("DefaultSet() is not sorted: %v", def)
	}
	for _, n := range def {
		if !slices.Contains(names, n) {
			t.Errorf("DefaultSet() has %q, which is not in the catalogue", n)
		}
	}
	if _, ok := Lookup("lucy_nope"); ok {
		t.Errorf("Lookup(unknown) = true")
	}
}

func checkObjectSchema(t *testing.T, p map[string]any) {
	t.Helper()
	if p["type"] != "object" {
		t.Fatalf("parameters type = %v, want object", p["type"])
	}
	if p["additionalProperties"] != false {
		t.Errorf("additionalProperties = %v, want false", p["additionalProperties"])
	}
	props, ok := p["properties"].(map[string]any)
	if !ok {
		t.Fatalf("properties is %T, want map[string]any", p["properties"])
	}
	required, ok := p["required"].([]string)
	if !ok {
		t.Fatalf("required is %T, want []string", p["required"])
	}
	for _, r := range required {
		if _, ok := props[r]; !ok {
			t.Errorf("required field %q is not in properties", r)
		}
	}
	checkKeywords(t, "parameters", p)
	for name, v := range props {
		ps, ok := v.(map[string]any)
		if !ok {
			t.Errorf("property %q is %T", name, v)
			continue
		}
		if ps["type"] == nil || ps["description"] == nil {
			t.Errorf("property %q needs a type and a description: %v", name, ps)
		}
		checkKeywords(t, name, ps)
	}
}

func checkKeywords(t *testing.T, path string, s map[string]any) {
	t.Helper()
	for k, v := range s {
		if !schemaKeywords[k] {
			t.Errorf("%s uses keyword %q, which the validator does not enforce", path, k)
		}
		if k == "items" {
			checkKeywords(t, path+".items", v.(map[string]any))
		}
	}
}

// Register refuses what a Runner could not run: a builtin given a handler, a tool without one, a name
// twice. The catalogue itself passes, or no test would start.
func TestRegisterRefusesBadDeclarations(t *testing.T) {
	run := func(*Registry, context.Context, Invocation) (Output, error) { return Output{}, nil }
	for name, f := range map[string]func(){
		"no run":          func() { Register[*Registry](Def{Spec: Spec{Name: "x_test_tool"}}, nil) },
		"builtin and run": func() { Register(Def{Spec: Spec{Name: "x_test_tool", Builtin: true}}, run) },
		"no name":         func() { RegisterBuiltin(Def{}) },
		"twice":           func() { RegisterBuiltin(Def{Spec: Spec{Name: ReadFile}}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			f()
		}()
	}
	if _, ok := Lookup("x_test_tool"); ok {
		t.Errorf("a refused declaration was registered")
	}
}

func TestLookupReturnsACopy(t *testing.T) {
	s, _ := Lookup(ReadFile)
	s.Parameters["type"] = "string"
	s.Parameters["required"].([]string)[0] = "mutated"
	s.Parameters["properties"].(map[string]any)["path"].(map[string]any)["type"] = "integer"

	again, _ := Lookup(ReadFile)
	if again.Parameters["type"] != "object" || again.Parameters["required"].([]string)[0] != "path" ||
		again.Parameters["properties"].(map[string]any)["path"].(map[string]any)["type"] != "string" {
		t.Errorf("modifying a Lookup result changed the catalogue: %v", again.Parameters)
	}
}

func TestSchemas(t *testing.T) {
	r := newTestRunner(t, newTestRegistry(t, Deps{}))
	got := r.Schemas(t.Context(), testTeam, []string{WebFetch, "nope", AskHuman, ReadFile})
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if want := []string{WebFetch, AskHuman, ReadFile}; !slices.Equal(names, want) {
		t.Errorf("Schemas names = %v, want %v", names, want)
	}
	if len(r.Schemas(t.Context(), testTeam, nil)) != 0 {
		t.Errorf("Schemas(nil) is not empty")
	}
}

func TestRunDispatch(t *testing.T) {
	r := newTestRegistry(t, Deps{})
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			s, _ := Lookup(name)
			_, err := run(t, r, name, `[1]`)
			if s.Builtin {
				if !errors.Is(err, ErrBuiltin) {
					t.Errorf("Run(builtin) error = %v, want ErrBuiltin", err)
				}
				return
			}
			// Every activity tool is implemented and validates its arguments before any I/O.
			wantArgError(t, err, name, "must be a JSON object")
		})
	}
	_, err := run(t, r, "lucy_send_email", `{}`)
	wantArgError(t, err, "lucy_send_email", "there is no tool named", WebFetch)
}

func TestCapOutput(t *testing.T) {
	long := strings.Repeat("é", MaxOutputChars+10)
	got := capOutput(long)
	if n := len([]rune(got)); n > MaxOutputChars {
		t.Errorf("capOutput kept %d characters, want at most %d", n, MaxOutputChars)
	}
	if !strings.HasSuffix(got, fmt.Sprintf("[Output truncated at %d characters.]", MaxOutputChars-64)) {
		t.Errorf("capOutput does not say it truncated: %q", got[len(got)-80:])
	}
	if short := "hello"; capOutput(short) != short {
		t.Errorf("capOutput changed a short string")
	}
}
