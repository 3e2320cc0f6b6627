package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Register refuses what a Runner could not run: a builtin given a handler, a tool without one, a name
// twice. The catalogue itself passes, or no test would start.
func TestRegisterRefusesBadDeclarations(t *testing.T) {
	run := func(*testDomain, context.Context, Invocation) (Output, error) { return Output{}, nil }
	for name, f := range map[string]func(){
		"no run":          func() { Register[*testDomain](Def{Spec: Spec{Name: "x_test_tool"}}, nil) },
		"builtin and run": func() { Register(Def{Spec: Spec{Name: "x_test_tool", Builtin: true}}, run) },
		"no name":         func() { RegisterBuiltin(Def{}) },
		"twice":           func() { RegisterBuiltin(Def{Spec: Spec{Name: testRead}}) },
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
	s, _ := Lookup(testRead)
	s.Parameters["type"] = "string"
	s.Parameters["required"].([]string)[0] = "mutated"
	s.Parameters["properties"].(map[string]any)["path"].(map[string]any)["type"] = "integer"

	again, _ := Lookup(testRead)
	if again.Parameters["type"] != "object" || again.Parameters["required"].([]string)[0] != "path" ||
		again.Parameters["properties"].(map[string]any)["path"].(map[string]any)["type"] != "string" {
		t.Errorf("modifying a Lookup result changed the catalogue: %v", again.Parameters)
	}
}

func TestSchemas(t *testing.T) {
	r := newTestRunner(t, &testDomain{})
	got := r.Schemas(t.Context(), testTeam, []string{"nope", testRead})
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if want := []string{testRead}; !slices.Equal(names, want) {
		t.Errorf("Schemas names = %v, want %v", names, want)
	}
	if len(r.Schemas(t.Context(), testTeam, nil)) != 0 {
		t.Errorf("Schemas(nil) is not empty")
	}
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
