package openapi

import (
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The JSON Schemas of a service's tools are built from the document's, with every $ref resolved in
// place, and kept to what function calling accepts: plain JSON Schema (OpenAPI 3.0's nullable
// becomes a "null" type, oneOf becomes anyOf, allOf is merged), every array with its items, no
// vendor or documentation keywords, recursion and depth cut off with a description that says so.
//
// A document is written by whoever serves it, and $refs let a few kilobytes describe a tree of
// billions of nodes (a schema whose 60 properties each refer to the next level, six levels deep).
// Expanding it in place is what makes a schema usable by a model, so the expansion is budgeted: a
// tool's schemas together stop at maxSchemaNodes nodes (the rest is described as "(schema cut: …)"),
// alternatives are bounded, and a tool whose schema is still more than maxToolSchemaBytes of JSON is
// built again shallower, or left out (buildOperation).

const (
	maxSchemaDepth  = 6   // nesting kept; deeper structures are described, not spelled out
	maxProps        = 60  // properties of one object
	maxEnum         = 50  // values of one enum
	maxAlternatives = 20  // members of one oneOf, anyOf or allOf
	maxDescChars    = 150 // characters of one property's description (the document's text, offered to the model)
	// maxSchemaNodes bounds the schema nodes one tool's parameters expand to, however the document's
	// $refs nest: the work and memory of building a tool are bounded by it, not by the document.
	maxSchemaNodes = 5000
	// maxToolSchemaBytes bounds one tool's parameters as JSON, as MCP tools' schemas are bounded:
	// every run of its owner sends them to the model.
	maxToolSchemaBytes = 32 << 10
)

// schemaCut is the description of what a budget left out.
const schemaCut = "(schema cut: the API's description of this part is too large to spell out; see the API's documentation)"

// converter builds one tool's schemas; seen holds the schemas on the current path, to cut cycles.
// nodes counts the schema nodes built so far for the tool, against maxSchemaNodes; cut records that
// a budget or bound left something out.
type converter struct {
	seen     map[*openapi3.Schema]bool
	maxDepth int
	nodes    int
	cut      bool
}

func newConverter(maxDepth int) *converter {
	return &converter{seen: map[*openapi3.Schema]bool{}, maxDepth: maxDepth}
}

// convert returns the JSON Schema of ref. request drops readOnly properties (a request must not
// send them, and openapi3filter refuses them).
func (c *converter) convert(ref *openapi3.SchemaRef, depth int, request bool) map[string]any {
	if ref == nil || ref.Value == nil {
		return map[string]any{}
	}
	s := ref.Value
	if s.Always != nil { // a boolean schema: true accepts anything
		return map[string]any{}
	}
	if c.nodes >= maxSchemaNodes {
		c.cut = true
		out := map[string]any{"description": schemaCut}
		if t := typesOf(s); len(t) == 1 && t[0] != "array" {
			out["type"] = t[0]
		}
		return out
	}
	c.nodes++
	if c.seen[s] || depth > c.maxDepth {
		out := map[string]any{"description": "A nested structure (see the API's documentation)."}
		if t := typesOf(s); len(t) == 1 {
			out["type"] = t[0]
			if t[0] == "array" {
				out["items"] = map[string]any{}
			}
		}
		return out
	}
	c.seen[s] = true
	defer delete(c.seen, s)

	out := map[string]any{}
	if t := typesOf(s); len(t) == 1 {
		out["type"] = t[0]
	} else if len(t) > 1 {
		out["type"] = t
	}
	if d := descriptionOf(s); d != "" {
		out["description"] = d
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum[:min(len(s.Enum), maxEnum)]
	} else if s.Const != nil {
		out["enum"] = []any{s.Const}
	}
	if s.Format != "" {
		out["format"] = s.Format
	}
	if s.Default != nil {
		out["default"] = s.Default
	}
	if s.Min != nil {
		out["minimum"] = *s.Min
	}
	if s.Max != nil {
		out["maximum"] = *s.Max
	}
	if s.MinLength > 0 {
		out["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	if s.Pattern != "" {
		out["pattern"] = s.Pattern
	}
	if s.MinItems > 0 {
		out["minItems"] = s.MinItems
	}
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	if s.Items != nil || out["type"] == "array" || hasType(out, "array") {
		out["items"] = c.convert(s.Items, depth+1, request)
	}
	if len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil || s.AdditionalProperties.Has != nil {
		c.object(out, s, depth, request)
	}
	var alts []any
	for _, group := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf} {
		for _, r := range group {
			if len(alts) == maxAlternatives {
				c.cut = true
				break
			}
			alts = append(alts, c.convert(r, depth+1, request))
		}
	}
	if len(alts) > 0 {
		out["anyOf"] = alts
	}
	for i, r := range s.AllOf {
		if i == maxAlternatives {
			c.cut = true
			break
		}
		merge(out, c.convert(r, depth+1, request))
	}
	if out["type"] == nil && out["properties"] != nil {
		out["type"] = "object"
	}
	return out
}

// object adds an object's properties, required list and additionalProperties to out.
func (c *converter) object(out map[string]any, s *openapi3.Schema, depth int, request bool) {
	names := make([]string, 0, len(s.Properties))
	for n, p := range s.Properties {
		if request && p != nil && p.Value != nil && p.Value.ReadOnly {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > maxProps {
		names = names[:maxProps]
		c.cut = true
	}
	props := make(map[string]any, len(names))
	for _, n := range names {
		props[n] = c.convert(s.Properties[n], depth+1, request)
	}
	out["properties"] = props
	var req []string
	for _, r := range s.Required {
		if _, ok := props[r]; ok {
			req = append(req, r)
		}
	}
	if len(req) > 0 {
		out["required"] = req
	}
	switch {
	case s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has:
		out["additionalProperties"] = false
	case s.AdditionalProperties.Schema != nil:
		out["additionalProperties"] = c.convert(s.AdditionalProperties.Schema, depth+1, request)
	}
}

// merge folds an allOf member into out: properties and required lists are joined, other keywords
// fill what out lacks.
func merge(out, part map[string]any) {
	for k, v := range part {
		switch k {
		case "properties":
			dst, _ := out["properties"].(map[string]any)
			if dst == nil {
				dst = map[string]any{}
				out["properties"] = dst
			}
			for pk, pv := range v.(map[string]any) {
				if _, ok := dst[pk]; !ok {
					dst[pk] = pv
				}
			}
		case "required":
			have, _ := out["required"].([]string)
			for _, r := range v.([]string) {
				if !contains(have, r) {
					have = append(have, r)
				}
			}
			out["required"] = have
		default:
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// typesOf is a schema's JSON types, with OpenAPI 3.0's nullable as "null".
func typesOf(s *openapi3.Schema) []string {
	var t []string
	if s.Type != nil {
		t = append(t, s.Type.Slice()...)
	}
	if s.Nullable && len(t) > 0 && !contains(t, "null") {
		t = append(t, "null")
	}
	return t
}

func hasType(out map[string]any, typ string) bool {
	t, _ := out["type"].([]string)
	return contains(t, typ)
}

func descriptionOf(s *openapi3.Schema) string {
	d := s.Description
	if d == "" {
		d = s.Title
	}
	return truncate(collapse(d), maxDescChars)
}

// propName makes a parameter's name a property name function calling accepts
// ([a-zA-Z0-9_.-], at most 64).
func propName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "_"
	}
	return s
}
