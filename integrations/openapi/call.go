package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// callTimeout bounds one API call (the activity's own timeout is longer: the tool is Long).
const callTimeout = 2 * time.Minute

// failure is the last failed call of a service on this worker, for its health.
type failure struct {
	at  time.Time
	why string
}

// handler is the tool of one operation of a team's service.
func (s *Services) handler(sv *service, op operation) tools.Handler {
	return func(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
		return s.call(ctx, inv, sv, op)
	}
}

// call validates the model's arguments as a request of the operation, sends it with the team's
// credential and returns the response as text. Nothing is sent for a request the document refuses.
func (s *Services) call(ctx context.Context, inv tools.Invocation, sv *service, op operation) (tools.Output, error) {
	svc := sv.rec.Service
	if sv.err != nil || sv.doc == nil {
		return tools.ToolError("the custom integration %s cannot be used: %v", svc, sv.err), nil
	}
	args, err := decodeArgs(inv.Name, inv.Arguments, op)
	if err != nil {
		return tools.Output{}, err
	}
	base, err := url.Parse(sv.rec.BaseURL)
	if err != nil {
		return tools.ToolError("the base URL stored for %s does not parse; connect it again", svc), nil
	}
	req, body, pathParams, err := buildRequest(ctx, base, op, args)
	if err != nil {
		return tools.Output{}, tools.ArgErrorf(inv.Name, "%v", err)
	}
	item := sv.doc.Paths.Value(op.Path)
	var docOp *openapi3.Operation
	if item != nil {
		docOp = item.GetOperation(op.Method)
	}
	if docOp == nil {
		return tools.ToolError("%s %s is no longer in the stored description of %s; connect it again", op.Method, op.Path, svc), nil
	}
	route := &routers.Route{Spec: sv.doc, Path: op.Path, PathItem: item, Method: op.Method, Operation: docOp}
	opts := &openapi3filter.Options{
		// The credential is not on the request yet (it is read only to send): security is Lucy's to
		// apply, not the model's to provide.
		AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults:     true,
		MultiError:              true,
		SchemaValidationOptions: sv.doc.GetSchemaValidationOptions(),
	}
	input := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: opts}
	if err := openapi3filter.ValidateRequest(ctx, input); err != nil {
		return tools.Output{}, tools.ArgErrorf(inv.Name, "the request does not fit the API's description, so nothing was sent: %s",
			validationMessage(err))
	}
	setBody(req, body) // validation read it

	var scrub []string
	needsKey := op.Auth && sv.rec.Auth != nil
	if needsKey {
		// The operation's own security requirement decides, as the stored description says it: a key
		// it does not accept is not sent, and the person hears what it needs instead of a 401 that
		// reads as a wrong key.
		if use, why := keyFits(sv.doc, docOp, sv.rec.Auth, base); !use && why != "" {
			return tools.ToolError("%s %s was not called, so nothing was sent: %s.", op.Method, op.Path, why), nil
		}
	}
	if err := s.checkURL(ctx, req.URL, needsKey); err != nil {
		return tools.ToolError("%s: %v", svc, err), nil
	}
	if needsKey {
		if origin := secrets.Origin(req.URL); origin != sv.rec.Origin {
			return tools.ToolError("%s: this call would go to %s, not to %s where its key was given, so nothing was sent", svc, origin, sv.rec.Origin), nil
		}
		cred, err := s.credential(ctx, inv, sv.rec)
		var refused refusal
		switch {
		case errors.Is(err, errNoKey):
			return tools.ToolError("no key named %q is stored, so nothing was sent. The person must add it with the Add key button "+
				"(%s needs %s); never ask them to paste it in the chat. Calling %s again for this service posts the button.",
				sv.rec.Credential, svc, sv.rec.Auth.describe(), ResolveTool), nil
		case errors.As(err, &refused):
			return tools.ToolError("%s: nothing was sent: %s", svc, string(refused)), nil
		case err != nil:
			return tools.Output{}, err
		}
		scrub, err = s.apply(ctx, req, inv.Team, svc, sv.rec.Auth, cred)
		if err != nil {
			if ctx.Err() != nil {
				return tools.Output{}, ctx.Err()
			}
			msg := secrets.Scrub(err.Error(), scrub...)
			s.noteFailure(inv.Team, svc, msg)
			var te *tokenError
			if errors.As(err, &te) && te.status == 0 && op.idempotent() {
				return tools.Output{}, &tools.TransientError{Tool: inv.Name, Err: errors.New(msg)}
			}
			return tools.ToolError("%s: nothing was sent: %s", svc, msg), nil
		}
	}

	from := "the API of the custom integration " + svc + " (" + sv.rec.Origin + ")"
	// A service that takes only so many calls at once (MaxConcurrent) has the call wait here for a
	// slot of this worker's; the activity heartbeats meanwhile, so "cancel that" ends the wait.
	release, err := s.slots.Acquire(ctx, inv.Team, svc, sv.rec.MaxConcurrent)
	if err != nil {
		return tools.Output{}, err
	}
	defer release()
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := s.api.Do(req.WithContext(cctx))
	if err != nil {
		if ctx.Err() != nil {
			return tools.Output{}, ctx.Err()
		}
		msg := secrets.Scrub(collapse(err.Error()), scrub...)
		s.noteFailure(inv.Team, svc, "unreachable")
		if tools.IsPrivateAddress(err) {
			return tools.ToolError("%s: the API is at a private, loopback or reserved address, which Lucy does not reach", svc), nil
		}
		if op.idempotent() {
			return tools.Output{}, &tools.TransientError{Tool: inv.Name, Err: errors.New(msg)}
		}
		return tools.ToolError("%s %s failed: %s. The request may or may not have reached %s: check before trying again.",
			op.Method, op.Path, msg, svc), nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil && op.idempotent() {
		return tools.Output{}, &tools.TransientError{Tool: inv.Name, Err: errors.New(secrets.Scrub(err.Error(), scrub...))}
	}
	capped := len(data) > maxResponseBytes
	if capped {
		data = data[:maxResponseBytes]
	}
	status := resp.Status
	code := resp.StatusCode
	if th := tools.NewThrottled(inv.Name, "the custom integration "+svc, code, resp.Header, s.d.Now(), tools.SafeMethod(op.Method)); th != nil {
		// 429 or 503 with Retry-After (RFC 6585 §4, RFC 9110 §10.2.3): the run waits as told and
		// calls again if the request is safe to repeat, or tells the model; nothing sleeps here.
		s.noteFailure(inv.Team, svc, "HTTP "+status)
		return tools.Output{}, th
	}
	switch {
	case code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout:
		s.noteFailure(inv.Team, svc, "HTTP "+status)
		short := secrets.Scrub(shortBody(data), scrub...)
		if op.idempotent() {
			return tools.Output{}, &tools.TransientError{Tool: inv.Name, Err: fmt.Errorf("%s answered HTTP %s:\n%s", svc, status, tools.UntrustedResult(from, short)),
				RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		}
		return tools.ToolError("%s answered HTTP %s. The request may have been partly done: check before trying again.\n%s",
			svc, status, tools.UntrustedResult(from, short)), nil
	case code >= 400:
		s.noteSuccess(inv.Team, svc) // the API is up; the request was refused
		hint := ""
		switch {
		case (code == http.StatusUnauthorized || code == http.StatusForbidden) && needsKey && sv.rec.Auth.Given != "":
			hint = fmt.Sprintf(" Lucy sent the stored key %q %s, the way given when it was connected (auth: %s; the description "+
				"declares no security for this operation): the key may be wrong, expired or lack a permission, or the API may take it "+
				"another way (connect it again with another auth, as its documentation says). The person can replace the key with "+
				"the Add key button.", sv.rec.Credential, sv.rec.Auth.how(), sv.rec.Auth.Given)
		case (code == http.StatusUnauthorized || code == http.StatusForbidden) && needsKey:
			hint = fmt.Sprintf(" Lucy sent the stored key %q as %s (the scheme %s), which the description says this operation "+
				"accepts: the key may be wrong, expired or lack a permission%s. The person can replace it with the Add key button.",
				sv.rec.Credential, sv.rec.Auth.describe(), sv.rec.Auth.Scheme, scopesText(sv.doc, docOp, sv.rec.Auth.Scheme))
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			hint = " Lucy sent no key with it: the document does not say this operation needs one. If it does, connect it again " +
				"naming its key (credential) and, when the document declares no security, how the key is sent (auth)."
		}
		return tools.ToolError("%s answered HTTP %s.%s\n%s", svc, status, hint, tools.UntrustedResult(from, secrets.Scrub(shortBody(data), scrub...))), nil
	}
	s.noteSuccess(inv.Team, svc)

	// The body is the API's text, and whoever runs the API is no more trusted than its document's
	// author: it reaches the model fenced as data.
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s", status)
	ct := resp.Header.Get("Content-Type")
	if ct != "" {
		fmt.Fprintf(&b, " (%s)", ct)
	}
	if loc := resp.Header.Get("Location"); loc != "" && code >= 300 {
		fmt.Fprintf(&b, "\nLocation: %s", tools.RedactCredentials(loc))
	}
	b.WriteString("\n\n")
	b.WriteString(tools.UntrustedResult(from, secrets.Scrub(formatBody(ct, data), scrub...)))
	if capped {
		fmt.Fprintf(&b, "\n\n[The response was longer than %d bytes; the rest was not read.]", maxResponseBytes)
	}
	if !capped && code < 300 {
		rin := &openapi3filter.ResponseValidationInput{RequestValidationInput: input, Status: code, Header: resp.Header,
			Options: &openapi3filter.Options{MultiError: true, SchemaValidationOptions: opts.SchemaValidationOptions}}
		rin.SetBodyBytes(data)
		if err := openapi3filter.ValidateResponse(ctx, rin); err != nil {
			fmt.Fprintf(&b, "\n\nNote: the response does not match the API's description (the data above is what it sent): %s",
				validationMessage(err))
		}
	}
	return tools.Output{Content: secrets.Scrub(b.String(), scrub...)}, nil
}

// scopesText names the OAuth2 scopes the operation's requirement asks of scheme, for a refusal.
func scopesText(doc *openapi3.T, op *openapi3.Operation, scheme string) string {
	for _, r := range requirements(doc, op) {
		if sc, ok := r[scheme]; ok && len(r) == 1 && len(sc) > 0 {
			return " (the operation asks for the scopes " + strings.Join(sc, ", ") + ")"
		}
	}
	return ""
}

func (s *Services) noteFailure(team, svc, why string) {
	s.mu.Lock()
	s.failures[team+"/"+svc] = failure{at: s.d.Now(), why: why}
	s.mu.Unlock()
}

func (s *Services) noteSuccess(team, svc string) {
	s.mu.Lock()
	delete(s.failures, team+"/"+svc)
	s.mu.Unlock()
}

// decodeArgs reads the model's arguments: one JSON object whose members are the tool's properties.
// Numbers stay as written (json.Number), so an id of 20 digits reaches the API exactly.
func decodeArgs(tool, raw string, op operation) (map[string]any, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, tools.ArgErrorf(tool, "the arguments must be one JSON object with the operation's parameters")
	}
	if dec.More() {
		return nil, tools.ArgErrorf(tool, "unexpected data after the JSON object; send exactly one object")
	}
	props, _ := op.Parameters["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for k := range args {
		if _, ok := props[k]; !ok {
			return nil, tools.ArgErrorf(tool, "unknown field %q; the fields are: %s", k, strings.Join(names, ", "))
		}
	}
	req, _ := op.Parameters["required"].([]string)
	for _, r := range req {
		if v, ok := args[r]; !ok || v == nil {
			return nil, tools.ArgErrorf(tool, "missing required field %q", r)
		}
	}
	return args, nil
}

// buildRequest makes the HTTP request of a call: the path with its parameters, the query, headers,
// cookies and body. pathParams are the raw values, for validation.
func buildRequest(ctx context.Context, base *url.URL, op operation, args map[string]any) (*http.Request, []byte, map[string]string, error) {
	p := op.Path
	pathParams := map[string]string{}
	query := url.Values{}
	var rawQuery []string
	header := http.Header{}
	var cookies []*http.Cookie
	for _, pm := range op.Params {
		v, ok := args[pm.Prop]
		if !ok || v == nil {
			continue
		}
		switch pm.In {
		case openapi3.ParameterInPath:
			s := serialize(v, pm, "simple")
			pathParams[pm.Name] = s
			switch pm.Style {
			case "label":
				s = "." + s
			case "matrix":
				s = ";" + pm.Name + "=" + s
			}
			p = strings.ReplaceAll(p, "{"+pm.Name+"}", url.PathEscape(s))
		case openapi3.ParameterInQuery:
			addQuery(query, &rawQuery, pm, v)
		case openapi3.ParameterInHeader:
			header.Set(pm.Name, serialize(v, pm, "simple"))
		case openapi3.ParameterInCookie:
			cookies = append(cookies, &http.Cookie{Name: pm.Name, Value: serialize(v, pm, "form")})
		}
	}
	if strings.Contains(p, "{") {
		return nil, nil, nil, fmt.Errorf("a path parameter of %s is missing", op.Path)
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + p
	q := query.Encode()
	if len(rawQuery) > 0 {
		q = strings.Trim(q+"&"+strings.Join(rawQuery, "&"), "&")
	}
	u.RawQuery = q
	var body []byte
	if v, ok := args[op.BodyProp]; ok && op.BodyProp != "" && v != nil {
		var err error
		if body, err = encodeBody(op.BodyType, v); err != nil {
			return nil, nil, nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, op.Method, u.String(), nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cannot build the request: %v", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	req.Header.Set("User-Agent", tools.UserAgent)
	req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.5")
	if body != nil {
		req.Header.Set("Content-Type", op.BodyType)
	}
	setBody(req, body)
	return req, body, pathParams, nil
}

func setBody(req *http.Request, body []byte) {
	if body == nil {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
}

// encodeBody writes the body in its media type: JSON, a form, or text.
func encodeBody(mediaType string, v any) ([]byte, error) {
	switch {
	case mediaType == "application/x-www-form-urlencoded":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, errors.New(`"body" must be an object of form fields`)
		}
		form := url.Values{}
		for k, fv := range obj {
			if list, ok := fv.([]any); ok {
				for _, e := range list {
					form.Add(k, scalar(e))
				}
				continue
			}
			form.Set(k, scalar(fv))
		}
		return []byte(form.Encode()), nil
	case strings.HasPrefix(mediaType, "text/"):
		if s, ok := v.(string); ok {
			return []byte(s), nil
		}
		return nil, errors.New(`"body" must be a string (the text to send)`)
	}
	return json.Marshal(v)
}

// scalar writes one value as a parameter writes it: numbers as given, objects and arrays as JSON.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// explode is a parameter's explode, with OpenAPI's default (true for form only).
func explode(pm param, style string) bool {
	if pm.Explode != nil {
		return *pm.Explode
	}
	return style == "form"
}

// serialize writes a path, header or cookie value in the parameter's style (simple or form):
// arrays comma-separated, objects as k,v pairs (k=v when exploded).
func serialize(v any, pm param, defaultStyle string) string {
	if pm.JSON {
		b, _ := json.Marshal(v)
		return string(b)
	}
	style := pm.Style
	if style == "" {
		style = defaultStyle
	}
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalar(e)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			if explode(pm, style) || style == "simple" && pm.Explode != nil && *pm.Explode {
				parts = append(parts, k+"="+scalar(x[k]))
			} else {
				parts = append(parts, k, scalar(x[k]))
			}
		}
		return strings.Join(parts, ",")
	}
	return scalar(v)
}

// addQuery adds a query parameter in its style: form (arrays repeated when exploded, else joined
// by commas), spaceDelimited, pipeDelimited, deepObject (name[key]=value).
func addQuery(q url.Values, raw *[]string, pm param, v any) {
	if pm.JSON {
		q.Add(pm.Name, scalar(v))
		return
	}
	style := pm.Style
	if style == "" {
		style = "form"
	}
	switch x := v.(type) {
	case []any:
		if style == "form" && explode(pm, style) {
			for _, e := range x {
				q.Add(pm.Name, scalar(e))
			}
			return
		}
		sep := ","
		switch style {
		case "spaceDelimited":
			sep = " "
		case "pipeDelimited":
			sep = "|"
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalar(e)
		}
		q.Add(pm.Name, strings.Join(parts, sep))
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		switch {
		case style == "deepObject":
			for _, k := range keys {
				// Brackets unescaped: servers (and openapi3filter) read deepObject keys literally.
				*raw = append(*raw, url.QueryEscape(pm.Name)+"["+url.QueryEscape(k)+"]="+url.QueryEscape(scalar(x[k])))
			}
		case explode(pm, style):
			for _, k := range keys {
				q.Add(k, scalar(x[k]))
			}
		default:
			var parts []string
			for _, k := range keys {
				parts = append(parts, k, scalar(x[k]))
			}
			q.Add(pm.Name, strings.Join(parts, ","))
		}
	default:
		q.Add(pm.Name, scalar(v))
	}
}

// validationMessage is openapi3filter's verdict in a few lines the model can act on.
func validationMessage(err error) string {
	var msgs []string
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		for _, e := range multi {
			msgs = append(msgs, oneValidation(e))
		}
	} else {
		msgs = append(msgs, oneValidation(err))
	}
	return truncate(strings.Join(msgs, "; "), 1200)
}

func oneValidation(err error) string {
	var re *openapi3filter.RequestError
	if errors.As(err, &re) {
		var where string
		if re.Parameter != nil {
			where = fmt.Sprintf("%s parameter %q: ", re.Parameter.In, re.Parameter.Name)
		} else if re.RequestBody != nil {
			where = "body: "
		}
		reason := re.Reason
		if re.Err != nil {
			var se *openapi3.SchemaError
			if errors.As(re.Err, &se) {
				reason = schemaReason(se)
			} else if reason == "" {
				reason = re.Err.Error()
			} else {
				reason += ": " + re.Err.Error()
			}
		}
		return where + collapse(reason)
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return schemaReason(se)
	}
	var resp *openapi3filter.ResponseError
	if errors.As(err, &resp) {
		reason := resp.Reason
		if resp.Err != nil {
			if errors.As(resp.Err, &se) {
				reason += ": " + schemaReason(se)
			} else {
				reason += ": " + resp.Err.Error()
			}
		}
		return collapse(reason)
	}
	return collapse(firstLine(err.Error()))
}

func schemaReason(se *openapi3.SchemaError) string {
	where := strings.Join(se.JSONPointer(), ".")
	if where != "" {
		return fmt.Sprintf("%s: %s", where, se.Reason)
	}
	return se.Reason
}

// shortBody is the start of an error response, for the model.
func shortBody(data []byte) string {
	if len(data) == 0 {
		return "(no body)"
	}
	if !utf8.Valid(data) {
		return fmt.Sprintf("(%d bytes of binary data)", len(data))
	}
	return truncate(collapse(string(data)), 500)
}

// formatBody renders a response body for the model: JSON indented (or compact when long), text as
// it is, binary data described.
func formatBody(contentType string, data []byte) string {
	if len(bytes.TrimSpace(data)) == 0 {
		return "(no body)"
	}
	media, _, _ := mime.ParseMediaType(contentType)
	isJSON := strings.Contains(media, "json") || (media == "" && json.Valid(data))
	if isJSON && json.Valid(data) {
		var out bytes.Buffer
		if len(data) < 8000 {
			if json.Indent(&out, data, "", "  ") == nil {
				return out.String()
			}
		} else if json.Compact(&out, data) == nil {
			return out.String()
		}
	}
	if utf8.Valid(data) && (media == "" || strings.HasPrefix(media, "text/") || isJSON || strings.Contains(media, "xml") ||
		strings.Contains(media, "yaml") || strings.Contains(media, "csv")) {
		return string(data)
	}
	return fmt.Sprintf("[%d bytes of %s, not shown]", len(data), orUnknown(media))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// retryAfter reads a Retry-After of whole seconds.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return min(time.Duration(n)*time.Second, time.Minute)
}
