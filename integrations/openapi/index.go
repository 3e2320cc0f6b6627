package openapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A real API's description is large (GitHub's REST description is 13 MB with 811 paths and 47 tags)
// and a person connects a few of its tags. Loading all of it with kin-openapi costs hundreds of MB
// (its YAML-first parse builds a node for every token, then a struct for every schema) to keep a
// tenth of it, and one flaw anywhere (two path templates that differ only in a parameter's name)
// refused the whole document. So the document is read once, as a stream of JSON, and indexed: each
// path's operations as their method, operationId, tags and security (a few bytes each), the raw JSON
// of only the paths that are chosen, and the components and top-level members that a reduced
// document may need. What kin-openapi loads and validates is the reduced document: the chosen paths
// with only their chosen methods, and the components they refer to, at any depth (reduce).

// opSummary is what the index keeps of an operation: enough to list, choose and name it.
type opSummary struct {
	method      string
	path        string
	operationID string
	tags        []string
}

func (o opSummary) key() string { return o.method + " " + o.path }

// pathEntry is one path of the document, in document order; raw is its path item's JSON, kept only
// when one of its operations is chosen.
type pathEntry struct {
	path string
	ops  []opSummary
	raw  json.RawMessage
}

// docIndex is a document as connecting needs it, read without loading it whole.
type docIndex struct {
	swagger bool   // Swagger 2.0 (converted to OpenAPI 3 after reduce)
	version string // the "openapi" or "swagger" member
	// top are the top-level members a reduced document keeps (info, servers, security, …), raw.
	top map[string]json.RawMessage
	// comps are the named parts a $ref can point at, by kind: OpenAPI 3's components/<kind>/<name>,
	// Swagger 2's definitions, parameters and responses. Whole kinds kept as they are (security
	// schemes) are in whole.
	comps map[string]map[string]json.RawMessage
	whole map[string]json.RawMessage
	paths []pathEntry
}

// keptTop are the top-level members a reduced document keeps; the rest (tags' prose, webhooks,
// extensions, which in GitHub's description are megabytes of webhook payloads) are dropped.
var keptTop = []string{"openapi", "swagger", "info", "servers", "security", "jsonSchemaDialect",
	"host", "basePath", "schemes", "consumes", "produces", "securityDefinitions"}

// swaggerComps are Swagger 2's top-level maps a $ref points into.
var swaggerComps = []string{"definitions", "parameters", "responses"}

// wholeComps are the component kinds kept whole: small, and read by name rather than by $ref.
var wholeComps = []string{"securitySchemes"}

// docTooLarge is a document over the size cap.
type docTooLarge struct{ limit int64 }

func (e docTooLarge) Error() string {
	size := fmt.Sprintf("%d bytes", e.limit)
	if e.limit >= 1<<20 && e.limit%(1<<20) == 0 {
		size = fmt.Sprintf("%d MB", e.limit>>20)
	}
	return "it is larger than " + size + ", the most Lucy reads of an OpenAPI document (LUCY_OPENAPI_MAX_DOCUMENT_MB)"
}

// cappedReader fails once more than limit bytes were read, and keeps failing: a reader above it
// (json.Decoder.More) may drop one error and read again.
type cappedReader struct {
	r     io.Reader
	left  int64
	limit int64
	err   error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.left <= 0 {
		// One byte more tells a document of exactly the limit from a longer one.
		var one [1]byte
		c.err = io.EOF
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			c.err = docTooLarge{c.limit}
		}
		return 0, c.err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// readIndex reads a document from r, at most limit bytes: JSON is streamed (only what keep wants of
// the paths is held), YAML is read whole and converted to JSON first. keep says whether an
// operation's path item is kept; it may change its answer as it sees more (the caller's choice of
// "everything, while it is small").
func readIndex(r io.Reader, limit int64, keep func(opSummary) bool) (*docIndex, error) {
	br := bufio.NewReaderSize(&cappedReader{r: r, left: limit, limit: limit}, 64<<10)
	// JSON or YAML is decided by parsing JSON first: a document whose first character is '{' is
	// JSON (every OpenAPI document is an object), and encoding/json takes any valid JSON, escapes
	// of surrogate pairs included, which a YAML parser may refuse.
	first, err := firstByte(br)
	if err != nil {
		return nil, err
	}
	if first == '{' {
		idx, err := indexJSON(br, keep)
		var tl docTooLarge
		if err == nil || errors.As(err, &tl) {
			return idx, err
		}
		return nil, fmt.Errorf("not valid JSON: %s", firstLine(err.Error()))
	}
	data, err := io.ReadAll(br)
	if err != nil {
		return nil, err
	}
	js, err := yamlToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not a JSON or YAML object: %s", firstLine(err.Error()))
	}
	idx, err := indexJSON(bytes.NewReader(js), keep)
	if len(data) >= freeAfterYAML {
		// A YAML document is parsed whole: its node tree and then its values take some sixteen
		// times its size (213 MiB for GitHub's description as 13 MB of YAML: BenchmarkResolveRetained),
		// all garbage once indexed. The Go runtime would hold that heap from the operating system
		// and give it back a few MB a second, so the worker's resident memory stayed hundreds of MiB
		// above what it uses; it is given back at once instead, at the cost of one collection (data
		// and js are not used past this point, so the collection frees them too).
		debug.FreeOSMemory()
	}
	return idx, err
}

// freeAfterYAML is the size of a YAML document above which reading it gives the heap it used back to
// the operating system at once (readIndex).
const freeAfterYAML = 1 << 20

// firstByte peeks the first byte that is not white space or a byte order mark.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, errors.New("the document is empty")
			}
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.ReadByte()
			continue
		case 0xEF: // UTF-8 byte order mark
			if bom, _ := br.Peek(3); bytes.Equal(bom, []byte{0xEF, 0xBB, 0xBF}) {
				_, _ = br.Discard(3)
				continue
			}
		}
		return b[0], nil
	}
}

// indexJSON walks the document's top level with a streaming decoder: paths one at a time (each
// decoded into its operations' summaries, its raw JSON dropped unless keep wants it), components one
// at a time, and the kept top-level members raw.
func indexJSON(r io.Reader, keep func(opSummary) bool) (*docIndex, error) {
	dec := json.NewDecoder(r)
	idx := &docIndex{top: map[string]json.RawMessage{}, comps: map[string]map[string]json.RawMessage{},
		whole: map[string]json.RawMessage{}}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return nil, err
		}
		switch {
		case key == "paths":
			if err := idx.readPaths(dec, keep); err != nil {
				return nil, err
			}
		case key == "components":
			if err := idx.readComponents(dec); err != nil {
				return nil, err
			}
		case slices.Contains(swaggerComps, key):
			m, err := readNamed(dec)
			if err != nil {
				return nil, err
			}
			idx.comps[key] = m
		case slices.Contains(keptTop, key):
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, err
			}
			idx.top[key] = compact(raw)
		default:
			if err := skipValue(dec); err != nil {
				return nil, err
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tl docTooLarge
		if errors.As(err, &tl) {
			return nil, err
		}
		return nil, errors.New("there is more after the document's closing '}'")
	}
	if raw, ok := idx.top["swagger"]; ok {
		idx.swagger = true
		idx.version = scalarText(raw)
	} else if raw, ok := idx.top["openapi"]; ok {
		idx.version = scalarText(raw)
	}
	return idx, nil
}

// scalarText is a JSON scalar as text: a string's value, a number as written.
func scalarText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// pathItemOps is what a path item's operations say about themselves, decoded from its raw JSON.
type pathItemOps map[string]json.RawMessage

type opHead struct {
	OperationID string   `json:"operationId"`
	Tags        []string `json:"tags"`
}

// methodKeys are the members of a path item that are operations, and their methods.
var methodKeys = map[string]string{"get": http.MethodGet, "put": http.MethodPut, "post": http.MethodPost,
	"delete": http.MethodDelete, "options": http.MethodOptions, "head": http.MethodHead, "patch": http.MethodPatch,
	"trace": http.MethodTrace}

func (idx *docIndex) readPaths(dec *json.Decoder, keep func(opSummary) bool) error {
	if err := expectDelim(dec, '{'); err != nil {
		return fmt.Errorf("paths: %w", err)
	}
	for dec.More() {
		p, err := objectKey(dec)
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("paths: %q: %w", truncate(p, 100), err)
		}
		e := pathEntry{path: p}
		var item pathItemOps
		if err := json.Unmarshal(raw, &item); err != nil {
			return fmt.Errorf("paths: %q is not an object", truncate(p, 100))
		}
		kept := false
		for k, v := range item {
			m, ok := methodKeys[k]
			if !ok {
				continue
			}
			var h opHead
			if err := json.Unmarshal(v, &h); err != nil {
				return fmt.Errorf("paths: %s %q is not an operation object", m, truncate(p, 100))
			}
			o := opSummary{method: m, path: p, operationID: h.OperationID, tags: h.Tags}
			e.ops = append(e.ops, o)
		}
		slices.SortFunc(e.ops, func(a, b opSummary) int {
			return slices.Index(methodOrder, a.method) - slices.Index(methodOrder, b.method)
		})
		for _, o := range e.ops {
			if keep(o) {
				kept = true
			}
		}
		if kept {
			e.raw = compact(raw)
		}
		idx.paths = append(idx.paths, e)
	}
	return expectDelim(dec, '}')
}

func (idx *docIndex) readComponents(dec *json.Decoder) error {
	if err := expectDelim(dec, '{'); err != nil {
		return fmt.Errorf("components: %w", err)
	}
	for dec.More() {
		kind, err := objectKey(dec)
		if err != nil {
			return err
		}
		switch {
		case slices.Contains(wholeComps, kind):
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			idx.whole[kind] = compact(raw)
		case strings.HasPrefix(kind, "x-"):
			if err := skipValue(dec); err != nil {
				return err
			}
		default:
			m, err := readNamed(dec)
			if err != nil {
				return fmt.Errorf("components: %s: %w", truncate(kind, 60), err)
			}
			idx.comps[kind] = m
		}
	}
	return expectDelim(dec, '}')
}

// readNamed reads an object of named parts, each kept raw and compact.
func readNamed(dec *json.Decoder) (map[string]json.RawMessage, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		name, err := objectKey(dec)
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out[name] = compact(raw)
	}
	return out, expectDelim(dec, '}')
}

// compact drops a raw value's insignificant white space (a published description is indented: a
// third of its bytes are spaces), into a new slice that does not hold the decoder's buffer.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.Grow(len(raw))
	if json.Compact(&b, raw) != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return b.Bytes()
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", want, t)
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("expected a member's name, found %v", t)
	}
	return k, nil
}

// skipValue reads past one value without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// yamlToJSON converts a YAML document to JSON: mapping keys become strings (a response code 200 is
// a YAML integer), aliases are expanded.
func yamlToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		if _, ok := v.(map[any]any); !ok {
			return nil, errors.New("the document is not an object")
		}
	}
	return json.Marshal(jsonable(v))
}

func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = jsonable(x)
		}
		return t
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = jsonable(x)
		}
		return out
	case []any:
		for i, x := range t {
			t[i] = jsonable(x)
		}
		return t
	}
	return v
}

// localRef finds the document-local $refs of raw JSON: "#/<pointer>".
var localRef = regexp.MustCompile(`"\$ref"\s*:\s*"#/([^"]*)"`)

// reduce builds the document made of the chosen operations (by key, "METHOD /path") and what they
// refer to: their path items with only those methods, the components their $refs reach at any
// depth, the security schemes and the kept top-level members. It is JSON in the document's own
// version (Swagger 2 stays Swagger 2).
func (idx *docIndex) reduce(chosen map[string]bool) ([]byte, error) {
	doc := map[string]any{}
	for k, v := range idx.top {
		doc[k] = v
	}
	paths := map[string]json.RawMessage{}
	used := map[string]map[string]json.RawMessage{}
	pending := [][]byte{}
	for _, e := range idx.paths {
		var want []string
		for _, o := range e.ops {
			if chosen[o.key()] {
				want = append(want, o.method)
			}
		}
		if len(want) == 0 {
			continue
		}
		if e.raw == nil {
			return nil, fmt.Errorf("the path %s was not kept", e.path)
		}
		var item map[string]json.RawMessage
		if err := json.Unmarshal(e.raw, &item); err != nil {
			return nil, err
		}
		for k := range item {
			if m, ok := methodKeys[k]; ok && !slices.Contains(want, m) {
				delete(item, k)
			}
		}
		raw, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		paths[e.path] = raw
		pending = append(pending, raw)
	}
	for _, raw := range idx.top {
		pending = append(pending, raw)
	}
	for _, raw := range idx.whole {
		pending = append(pending, raw)
	}
	for len(pending) > 0 {
		chunk := pending[0]
		pending = pending[1:]
		for _, m := range localRef.FindAllSubmatch(chunk, -1) {
			kind, name, ok := idx.refTarget(string(m[1]))
			if !ok {
				continue // a dangling or unknown $ref: the loader reports it
			}
			if used[kind] == nil {
				used[kind] = map[string]json.RawMessage{}
			}
			if _, seen := used[kind][name]; seen {
				continue
			}
			raw := idx.comps[kind][name]
			used[kind][name] = raw
			pending = append(pending, raw)
		}
	}
	doc["paths"] = paths
	if idx.swagger {
		for kind, m := range used {
			doc[kind] = m
		}
	} else {
		comps := map[string]any{}
		for kind, m := range used {
			comps[kind] = m
		}
		for kind, raw := range idx.whole {
			comps[kind] = raw
		}
		doc["components"] = comps
	}
	return json.Marshal(doc)
}

// refTarget splits a local $ref's pointer into the component it lies in: "components/schemas/Pet"
// (OpenAPI 3) or "definitions/Pet" (Swagger 2), and anything deeper inside that component.
func (idx *docIndex) refTarget(pointer string) (kind, name string, ok bool) {
	parts := strings.Split(pointer, "/")
	if !idx.swagger {
		if len(parts) < 3 || parts[0] != "components" {
			return "", "", false
		}
		parts = parts[1:]
	}
	if len(parts) < 2 {
		return "", "", false
	}
	kind, name = parts[0], unescapePointer(parts[1])
	if _, ok := idx.comps[kind][name]; !ok {
		return "", "", false
	}
	return kind, name, true
}

// operations lists every operation of the document in the order its tools are named: by path, then
// method.
func (idx *docIndex) operations() []opSummary {
	var out []opSummary
	for _, e := range idx.paths {
		out = append(out, e.ops...)
	}
	slices.SortStableFunc(out, func(a, b opSummary) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return slices.Index(methodOrder, a.method) - slices.Index(methodOrder, b.method)
	})
	return out
}
