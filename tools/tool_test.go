package tools

import (
	"reflect"
	"testing"
)

// TestFlags: Flags is Lookup without the schema, for every compiled-in tool, and knows no other.
func TestFlags(t *testing.T) {
	for _, name := range Names() {
		full, _ := Lookup(name)
		flags, ok := Flags(name)
		if !ok || flags.Parameters != nil {
			t.Errorf("Flags(%s) = %+v, %v", name, flags, ok)
			continue
		}
		full.Parameters = nil
		if !reflect.DeepEqual(flags, full) {
			t.Errorf("Flags(%s) = %+v\nLookup without Parameters = %+v", name, flags, full)
		}
	}
	if _, ok := Flags("no_such_tool"); ok {
		t.Error("Flags(no_such_tool) found a tool")
	}
}
