package tools

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValidateArgs checks a call's JSON arguments against the tool's schema and returns an *ArgError, with a
// message the model can act on, when they do not fit. It is deterministic and does no I/O (it never
// ranges over a map), so workflow code may use it for the builtin tools it executes itself.
func ValidateArgs(name, argsJSON string) error {
	t, ok := find(name)
	if !ok {
		return unknownTool(name)
	}
	_, err := parseArgs(t.def, argsJSON)
	return err
}

func unknownTool(name string) *ArgError {
	return ArgErrorf(name, "there is no tool named %q; the tools are: %s", name, strings.Join(Names(), ", "))
}

// field is one top-level argument, in the order the model wrote it.
type field struct {
	name  string
	value any // string, json.Number, bool, []any (with float64 numbers), map[string]any
}

// DecodeArgs validates the call's arguments against its tool's declared schema and then decodes them
// into dst, a pointer to the tool's argument struct. Validation first, so that every mistake gets a
// message written for the model rather than encoding/json's.
func DecodeArgs(inv Invocation, dst any) error {
	t, ok := find(inv.Name)
	if !ok {
		return unknownTool(inv.Name)
	}
	if _, err := parseArgs(t.def, inv.Arguments); err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(normalizeArgs(inv.Arguments)), dst); err != nil {
		// Validation accepted what the struct cannot hold: a bug in the schema, not the model's fault.
		return fmt.Errorf("decode %s arguments: %w", inv.Name, err)
	}
	return nil
}

// normalizeArgs maps "no arguments" spellings (empty string, null) to an empty object: models send all
// of them for tools without parameters.
func normalizeArgs(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || s == "null" {
		return "{}"
	}
	return s
}

// parseArgs reads the top-level JSON object member by member, in the model's order, and validates it
// against e's schema. It uses only json.Unmarshal (which workflowcheck.config.yaml declares
// deterministic) and a small scanner for the member order, and never ranges over a map.
func parseArgs(e Def, argsJSON string) ([]field, error) {
	tool := e.Spec.Name
	data := []byte(normalizeArgs(argsJSON))
	var whole any
	if err := json.Unmarshal(data, &whole); err != nil {
		if strings.Contains(err.Error(), "after top-level value") {
			return nil, ArgErrorf(tool, "unexpected data after the JSON object; send exactly one object, e.g. %s", example(e))
		}
		return nil, ArgErrorf(tool, "the arguments are not valid JSON (%v); send one JSON object, e.g. %s", err, example(e))
	}
	if _, ok := whole.(map[string]any); !ok {
		return nil, ArgErrorf(tool, "the arguments must be a JSON object, e.g. %s", example(e))
	}
	props := e.props()
	var fields []field
	for _, m := range objectMembers(data) {
		for _, f := range fields {
			if f.name == m.name {
				return nil, ArgErrorf(tool, "field %q is given twice", m.name)
			}
		}
		p, ok := findProp(props, m.name)
		if !ok {
			if len(props) == 0 {
				return nil, ArgErrorf(tool, "this tool takes no arguments (got %q); call it with {}", m.name)
			}
			return nil, ArgErrorf(tool, "unknown field %q; the fields are: %s", m.name, propNames(props))
		}
		var v any
		if err := json.Unmarshal(m.raw, &v); err != nil {
			return nil, ArgErrorf(tool, "field %q is not valid JSON: %v", m.name, err)
		}
		if _, isNum := v.(float64); isNum {
			v = json.Number(m.raw) // keep the literal: 20 and 20.0 differ for an integer field
		}
		if v == nil && !contains(e.Required, m.name) {
			continue // an optional field sent as null means "not given"
		}
		if msg := checkValue(m.name, p.Schema, v); msg != "" {
			return nil, ArgErrorf(tool, "%s", msg)
		}
		fields = append(fields, field{name: m.name, value: v})
	}
	for _, r := range e.Required {
		given := false
		for _, f := range fields {
			given = given || (f.name == r && f.value != nil)
		}
		if !given {
			p, _ := findProp(props, r)
			desc, _ := p.Schema["description"].(string)
			return nil, ArgErrorf(tool, "missing required field %q (%s): %s Example: %s", r, typeOf(p.Schema), desc, example(e))
		}
	}
	if e.MinProps > 0 && len(fields) < e.MinProps {
		return nil, ArgErrorf(tool, "give at least %d of: %s", e.MinProps, propNames(props))
	}
	return fields, nil
}

// member is one name/value pair of a JSON object, the value as written.
type member struct {
	name string
	raw  []byte
}

// objectMembers lists the members of data, a JSON object already known to be valid, in document order.
func objectMembers(data []byte) []member {
	var out []member
	i := skipSpace(data, 0) + 1 // past '{'
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] == '}' {
			return out
		}
		start := i
		i = skipString(data, i)
		var name string
		_ = json.Unmarshal(data[start:i], &name) // valid JSON: cannot fail
		i = skipSpace(data, i) + 1               // past ':'
		i = skipSpace(data, i)
		start = i
		i = skipValue(data, i)
		out = append(out, member{name: name, raw: data[start:i]})
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i++
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at data[i] ('"').
func skipString(data []byte, i int) int {
	for i++; i < len(data) && data[i] != '"'; i++ {
		if data[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index after the value that starts at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(data) && !strings.ContainsRune(",}] \t\n\r", rune(data[i])) {
		i++
	}
	return i
}

func findProp(props []Prop, name string) (Prop, bool) {
	for _, p := range props {
		if p.Name == name {
			return p, true
		}
	}
	return Prop{}, false
}

func propNames(props []Prop) string {
	names := make([]string, 0, len(props))
	for _, p := range props {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func typeOf(schema map[string]any) string {
	t, _ := schema["type"].(string)
	return t
}

// example renders a call with the required fields, in schema order, for error messages.
func example(e Def) string {
	var parts []string
	for _, p := range e.props() {
		if !contains(e.Required, p.Name) {
			continue
		}
		var v string
		switch typeOf(p.Schema) {
		case "integer":
			v = "1"
		case "array":
			v = `[["a","b"],["1","2"]]`
		default:
			v = `"..."`
			if enum, ok := p.Schema["enum"].([]string); ok && len(enum) > 0 {
				v = fmt.Sprintf("%q", enum[0])
			}
		}
		parts = append(parts, fmt.Sprintf("%q: %s", p.Name, v))
	}
	if len(parts) == 0 && e.MinProps > 0 {
		p := e.props()[0]
		parts = append(parts, fmt.Sprintf("%q: %q", p.Name, "..."))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// checkValue validates v against schema and returns a message for the model, or "" when v fits. It
// supports the keywords the catalogue uses (a test keeps the two in step).
func checkValue(path string, schema map[string]any, v any) string {
	want := typeOf(schema)
	if union, ok := schema["type"].([]string); ok {
		// A union of scalar types (a spreadsheet cell): v must be one of them.
		for _, t := range union {
			alt := map[string]any{"type": t}
			if t == "null" && v == nil || t != "null" && v != nil && checkValue(path, alt, v) == "" {
				return ""
			}
		}
		return fmt.Sprintf("%q must be one of: %s (got %s)", path, strings.Join(union, ", "), describe(v))
	}
	switch want {
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%q must be a string (got %s)", path, describe(v))
		}
		n := utf8.RuneCountInString(s)
		if minLen, ok := intKeyword(schema, "minLength"); ok && n < minLen {
			if n == 0 {
				return fmt.Sprintf("%q must not be empty", path)
			}
			return fmt.Sprintf("%q must be at least %d characters long", path, minLen)
		}
		if maxLen, ok := intKeyword(schema, "maxLength"); ok && n > maxLen {
			return fmt.Sprintf("%q is too long (%d characters; the limit is %d)", path, n, maxLen)
		}
		if enum, ok := schema["enum"].([]string); ok && !contains(enum, s) {
			return fmt.Sprintf("%q must be one of %s (got %q)", path, strings.Join(enum, ", "), s)
		}
	case "integer":
		num, ok := v.(json.Number)
		if f, isFloat := v.(float64); isFloat { // a number inside an array
			num, ok = json.Number(strconv.FormatFloat(f, 'f', -1, 64)), true
		}
		if !ok {
			return fmt.Sprintf("%q must be an integer (got %s)", path, describe(v))
		}
		n, err := num.Int64()
		if err != nil {
			return fmt.Sprintf("%q must be a whole number such as 20 (got %s)", path, num)
		}
		if lo, ok := intKeyword(schema, "minimum"); ok && n < int64(lo) {
			return fmt.Sprintf("%q must be at least %d (got %d)", path, lo, n)
		}
		if hi, ok := intKeyword(schema, "maximum"); ok && n > int64(hi) {
			return fmt.Sprintf("%q must be at most %d (got %d)", path, hi, n)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("%q must be true or false (got %s)", path, describe(v))
		}
	case "number":
		switch n := v.(type) {
		case float64:
		case json.Number:
			if _, err := n.Float64(); err != nil {
				return fmt.Sprintf("%q must be a number (got %s)", path, describe(v))
			}
		default:
			return fmt.Sprintf("%q must be a number (got %s)", path, describe(v))
		}
	case "object":
		// Nested objects (array items) list every property in "required", in order: the validator
		// walks that slice, never the map, and counts to find fields it does not know.
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("%q must be an object (got %s)", path, describe(v))
		}
		props, _ := schema["properties"].(map[string]any)
		names, _ := schema["required"].([]string)
		for _, name := range names {
			val, present := m[name]
			if !present {
				return fmt.Sprintf("%q is missing the field %q", path, name)
			}
			if ps, ok := props[name].(map[string]any); ok {
				if msg := checkValue(path+"."+name, ps, val); msg != "" {
					return msg
				}
			}
		}
		if len(m) > len(names) {
			return fmt.Sprintf("%q has fields it does not take; its fields are: %s", path, strings.Join(names, ", "))
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("%q must be an array (got %s)", path, describe(v))
		}
		if lo, ok := intKeyword(schema, "minItems"); ok && len(items) < lo {
			return fmt.Sprintf("%q must have at least %d item(s)", path, lo)
		}
		if hi, ok := intKeyword(schema, "maxItems"); ok && len(items) > hi {
			return fmt.Sprintf("%q has too many items (%d; the limit is %d)", path, len(items), hi)
		}
		if itemSchema, ok := schema["items"].(map[string]any); ok {
			for i, item := range items {
				if msg := checkValue(fmt.Sprintf("%s[%d]", path, i), itemSchema, item); msg != "" {
					return msg
				}
			}
		}
	default:
		return fmt.Sprintf("%q has a schema type (%q) the validator does not support", path, want)
	}
	return ""
}

func intKeyword(schema map[string]any, key string) (int, bool) {
	n, ok := schema[key].(int)
	return n, ok
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + v.String()
	case float64:
		return "the number " + strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return fmt.Sprintf("%t", v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
