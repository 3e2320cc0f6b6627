package toolset_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/rs/zerolog"
)

// These tests see the catalogue a worker sees: every domain linked through toolset.

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// schemaKeywords are the JSON Schema keywords checkValue understands; a schema using another one
// would be described to the model but not enforced.
var schemaKeywords = map[string]bool{
	"type": true, "description": true, "properties": true, "required": true, "additionalProperties": true,
	"enum": true, "items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "minProperties": true,
}

func TestCatalogueInvariants(t *testing.T) {
	names := tools.Names()
	if !slices.IsSorted(names) {
		t.Errorf("tools.Names() is not sorted: %v", names)
	}
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("tools.Names() has duplicates: %v", names)
	}
	wantBuiltins := []string{tools.AppendRunJournalEntry, tools.AskHuman, subagents.DelegateCode, subagents.DelegateDocument, subagents.DelegateIntegrations, subagents.DelegateResearch, tools.GetRunJournal, tools.UpdateRunJournal}
	var builtins []string
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, ok := tools.Lookup(name)
			if !ok {
				t.Fatalf("tools.Lookup(%q) = false", name)
			}
			if s.Name != name {
				t.Errorf("tools.Lookup(%q).Name = %q", name, s.Name)
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

	def := tools.DefaultSet()
	if !slices.IsSorted(def) {
		t.Errorf("tools.DefaultSet() is not sorted: %v", def)
	}
	for _, n := range def {
		if !slices.Contains(names, n) {
			t.Errorf("tools.DefaultSet() has %q, which is not in the catalogue", n)
		}
	}
	if _, ok := tools.Lookup("lucy_nope"); ok {
		t.Errorf("tools.Lookup(unknown) = true")
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

// TestSchemasGolden pins what the model is told: a change to a description or schema shows in review.
// Run `go test ./tools -run TestSchemasGolden -update` after an intended change.
func TestSchemasGolden(t *testing.T) {
	r := toolset.New(toolset.Deps{DataDir: t.TempDir(), Log: zerolog.Nop()}).Runner
	got, err := json.MarshalIndent(r.Schemas(t.Context(), "T1", tools.Names()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "schemas.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("schemas differ from %s; run with -update if the change is intended\ngot:\n%s", golden, got)
	}
}

func TestRunDispatch(t *testing.T) {
	r := toolset.New(toolset.Deps{DataDir: t.TempDir(), Log: zerolog.Nop()}).Runner
	for _, name := range tools.Names() {
		t.Run(name, func(t *testing.T) {
			s, _ := tools.Lookup(name)
			_, err := r.Run(t.Context(), tools.Invocation{Name: name, Arguments: `[1]`, Team: "T1"})
			if s.Builtin {
				if !errors.Is(err, tools.ErrBuiltin) {
					t.Errorf("Run(builtin) error = %v, want tools.ErrBuiltin", err)
				}
				return
			}
			// Every activity tool is implemented and validates its arguments before any I/O.
			wantArgError(t, err, name, "must be a JSON object")
		})
	}
	_, err := r.Run(t.Context(), tools.Invocation{Name: "lucy_send_email", Arguments: `{}`, Team: "T1"})
	wantArgError(t, err, "lucy_send_email", "there is no tool named", tools.WebFetch)
}

// wantArgError checks that err is an *tools.ArgError for tool whose message holds every want.
func wantArgError(tb testing.TB, err error, tool string, want ...string) {
	tb.Helper()
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) {
		tb.Fatalf("got error %v (%T), want *tools.ArgError", err, err)
	}
	if argErr.Tool != tool {
		tb.Errorf("ArgError.Tool = %q, want %q", argErr.Tool, tool)
	}
	for _, w := range want {
		if !strings.Contains(argErr.Msg, w) {
			tb.Errorf("ArgError %q does not contain %q", argErr.Msg, w)
		}
	}
}
