// Package openapiclient turns the operations of an OpenAPI document (3.0 or 3.1, JSON or YAML)
// into tools an agent calls, with kin-openapi: each operation's parameters and JSON request body
// become one JSON schema, and a call is made as the document says, through the HTTP client it
// is given (the SSRF-guarded one), within a time limit, its answer cut to a size.
package openapiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tools"
)

// Client calls the operations of OpenAPI documents: it is the tools' connector of type openapi.
type Client struct{ http *http.Client }

var _ tools.Connector = (*Client)(nil)

// New returns a client whose requests go through hc.
func New(hc *http.Client) *Client { return &Client{http: hc} }

// List reads the document of e (fetching it from e.SpecURL when it has one, which it returns)
// and lists its operations. A document that is not a valid OpenAPI document is an Invalid
// error listing its problems.
func (c *Client) List(ctx context.Context, e tools.Endpoint) ([]tools.Operation, string, error) {
	spec, fetched := e.Spec, ""
	if e.SpecURL != "" {
		var err error
		if spec, err = c.fetch(ctx, e); err != nil {
			return nil, "", err
		}
		fetched = spec
	}
	doc, err := load(ctx, spec)
	if err != nil {
		return nil, "", err
	}
	ops, err := operations(doc, e.SpecURL)
	if err != nil {
		return nil, "", err
	}
	if len(ops) == 0 {
		return nil, "", apperr.Invalidf("config.spec", "the document describes no operations")
	}
	return ops, fetched, nil
}

// fetch reads the document at e.SpecURL.
func (c *Client) fetch(ctx context.Context, e tools.Endpoint) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.SpecURL, nil)
	if err != nil {
		return "", apperr.Invalidf("config.spec_url", "is not a URL")
	}
	req.Header.Set("Accept", "application/json, application/yaml, text/yaml, */*")
	res, err := c.http.Do(req)
	if err != nil {
		return "", failure(ctx, err, "The OpenAPI document at config.spec_url could not be read.")
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return "", apperr.New(apperr.BadGateway, "spec_unreachable", fmt.Sprintf("The OpenAPI document at config.spec_url answered %d.", res.StatusCode))
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, tools.MaxSpecBytes+1))
	if err != nil {
		return "", failure(ctx, err, "The OpenAPI document at config.spec_url could not be read.")
	}
	if len(raw) > tools.MaxSpecBytes {
		return "", apperr.Invalidf("config.spec_url", "the document is larger than %d bytes", tools.MaxSpecBytes)
	}
	return string(raw), nil
}

// load parses and validates spec, resolving its own references and no others.
func load(ctx context.Context, spec string) (*openapi3.T, error) {
	if err := tools.CheckDocument([]byte(spec), "config.spec"); err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData([]byte(spec))
	if err != nil {
		return nil, apperr.Invalidf("config.spec", "is not an OpenAPI document: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return nil, apperr.Invalidf("config.spec", "must be OpenAPI 3.0 or 3.1 (openapi: %q)", doc.OpenAPI)
	}
	if err := doc.Validate(ctx, openapi3.EnableMultiError(), openapi3.DisableExamplesValidation()); err != nil {
		var p apperr.Problems
		var multi openapi3.MultiError
		if errors.As(err, &multi) {
			for _, e := range multi {
				p.Add("config.spec", "%v", e)
			}
		} else {
			p.Add("config.spec", "%v", err)
		}
		return nil, p.Err()
	}
	return doc, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9-]+`)

// operations are the operations of doc, by path and method, named by their operationId (else
// method and path). specURL, when the document was read from one, resolves relative servers.
// An operation whose input schema, its references inlined, is larger than the tools' limits
// (tools.MaxDepth, tools.MaxSchemaValues, tools.MaxSpecSchemaValues) is an Invalid error.
func operations(doc *openapi3.T, specURL string) ([]tools.Operation, error) {
	var out []tools.Operation
	seen := map[string]bool{}
	in := &inliner{doc: doc, components: map[string][]byte{}}
	paths := doc.Paths.Map()
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		item := paths[path]
		byMethod := item.Operations()
		for _, method := range slices.Sorted(maps.Keys(byMethod)) {
			op := byMethod[method]
			name := strings.Trim(unsafeName.ReplaceAllString(op.OperationID, "_"), "_")
			if name == "" {
				name = strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(method)+"_"+path, "_"), "_")
			}
			for base, n := name, 2; seen[name]; n++ {
				name = fmt.Sprintf("%s_%d", base, n)
			}
			seen[name] = true
			desc := strings.TrimSpace(op.Summary)
			if d := strings.TrimSpace(op.Description); d != "" && d != desc {
				desc = strings.TrimSpace(desc + " " + d)
			}
			if desc == "" {
				desc = strings.ToUpper(method) + " " + path
			}
			in.values = 0
			schema, binding, err := bind(in, item, op)
			if err != nil {
				return nil, apperr.Invalidf("config.spec", "the input of operation %s, its references inlined, %v", name, err)
			}
			binding.Method, binding.Path, binding.Server = strings.ToUpper(method), path, serverOf(doc, item, op, specURL)
			out = append(out, tools.Operation{Name: name, Description: desc, InputSchema: schema, Binding: binding,
				ReadOnly: method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions})
		}
	}
	return out, nil
}

// bind is the JSON schema of an operation's arguments (its parameters, and its JSON body as
// "body") and where each goes.
func bind(in *inliner, item *openapi3.PathItem, op *openapi3.Operation) (map[string]any, *tools.Binding, error) {
	props, required := map[string]any{}, []any{}
	b := &tools.Binding{}
	params := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			p := ref.Value
			if p == nil || (p.In != openapi3.ParameterInPath && p.In != openapi3.ParameterInQuery && p.In != openapi3.ParameterInHeader) {
				continue
			}
			key := p.In + " " + p.Name
			if _, ok := params[key]; !ok {
				order = append(order, key)
			}
			params[key] = p
		}
	}
	for _, key := range order {
		p := params[key]
		if _, taken := props[p.Name]; taken || p.Name == "body" {
			continue
		}
		s, err := in.schema(p.Schema)
		if err != nil {
			return nil, nil, err
		}
		if p.Description != "" {
			s["description"] = p.Description
		}
		props[p.Name] = s
		if p.Required || p.In == openapi3.ParameterInPath {
			required = append(required, p.Name)
		}
		reserved, _ := p.Extensions["x-allow-reserved"].(bool)
		b.Params = append(b.Params, tools.Param{Name: p.Name, In: p.In, Reserved: reserved && p.In == openapi3.ParameterInPath})
	}
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		for _, ct := range slices.Sorted(maps.Keys(rb.Value.Content)) {
			if ct != "application/json" && !strings.HasSuffix(ct, "+json") {
				continue
			}
			s, err := in.schema(rb.Value.Content[ct].Schema)
			if err != nil {
				return nil, nil, err
			}
			if rb.Value.Description != "" {
				s["description"] = rb.Value.Description
			}
			props["body"], b.Body = s, true
			if rb.Value.Required {
				required = append(required, "body")
			}
			break
		}
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	return schema, b, nil
}

// maxRefDepth bounds how deep a schema's references are inlined (recursive schemas end there).
const maxRefDepth = 8

// inliner makes the schemas of a document's operations plain JSON, their references to the
// document's components replaced by what they name, within the tools' limits: values counts
// those of the operation at hand, total those of the document.
type inliner struct {
	doc *openapi3.T
	// components are the JSON texts of the components' schemas read so far, by name.
	components    map[string][]byte
	values, total int
}

// schema is ref as plain JSON, inlined.
func (in *inliner) schema(ref *openapi3.SchemaRef) (map[string]any, error) {
	if ref == nil || ref.Value == nil {
		return map[string]any{}, nil
	}
	raw, err := json.Marshal(ref.Value)
	if err != nil {
		return map[string]any{}, nil
	}
	v, err := in.resolve(raw, 0, 0)
	out, _ := v.(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, err
}

// resolve is the JSON text raw as a value whose {"$ref": "#/components/schemas/X"} are the
// schema X, inlined, at depth (the nesting above it) and refs (the references inlined above
// it).
func (in *inliner) resolve(raw []byte, depth, refs int) (any, error) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return map[string]any{}, nil
	}
	return in.walk(v, depth, refs)
}

func (in *inliner) walk(v any, depth, refs int) (any, error) {
	if x, ok := v.(map[string]any); ok {
		if ref, ok := x["$ref"].(string); ok {
			return in.component(ref, depth, refs)
		}
	}
	in.values++
	in.total++
	switch {
	case in.values > tools.MaxSchemaValues:
		return nil, fmt.Errorf("has more than %d values (the limit)", tools.MaxSchemaValues)
	case in.total > tools.MaxSpecSchemaValues:
		return nil, fmt.Errorf("brings the document's operations' inputs to more than %d values (the limit)", tools.MaxSpecSchemaValues)
	case depth > tools.MaxDepth:
		return nil, fmt.Errorf("is nested deeper than %d levels (the limit)", tools.MaxDepth)
	}
	var err error
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if x[k], err = in.walk(e, depth+1, refs); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range x {
			if x[i], err = in.walk(e, depth+1, refs); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// component is the schema ref names, inlined; an empty schema when it names none of the
// document's components or references are nested too deep.
func (in *inliner) component(ref string, depth, refs int) (any, error) {
	name, found := strings.CutPrefix(ref, "#/components/schemas/")
	if !found || refs >= maxRefDepth || in.doc.Components == nil {
		return map[string]any{}, nil
	}
	raw, ok := in.components[name]
	if !ok {
		s := in.doc.Components.Schemas[name]
		if s == nil || s.Value == nil {
			return map[string]any{}, nil
		}
		var err error
		if raw, err = json.Marshal(s.Value); err != nil {
			return map[string]any{}, nil
		}
		in.components[name] = raw
	}
	return in.resolve(raw, depth, refs+1)
}

var serverVar = regexp.MustCompile(`\{([^}]+)\}`)

// serverOf is the URL an operation's calls go to: the first server of the operation, its path
// or the document, with its variables' defaults, resolved against specURL when relative.
func serverOf(doc *openapi3.T, item *openapi3.PathItem, op *openapi3.Operation, specURL string) string {
	var servers openapi3.Servers
	switch {
	case op.Servers != nil && len(*op.Servers) > 0:
		servers = *op.Servers
	case len(item.Servers) > 0:
		servers = item.Servers
	default:
		servers = doc.Servers
	}
	if len(servers) == 0 || servers[0] == nil {
		return ""
	}
	s := servers[0]
	raw := serverVar.ReplaceAllStringFunc(s.URL, func(m string) string {
		if v, ok := s.Variables[m[1:len(m)-1]]; ok && v != nil {
			return v.Default
		}
		return m
	})
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if !u.IsAbs() {
		base, err := url.Parse(specURL)
		if err != nil || specURL == "" {
			return ""
		}
		u = base.ResolveReference(u)
	}
	return u.String()
}

// Call makes the call op describes, with args (a JSON object of its parameters and "body"). An
// answer of 4xx or 5xx is the operation's own failure (IsError), with its status and text.
func (c *Client) Call(ctx context.Context, e tools.Endpoint, op tools.Operation, args json.RawMessage) (tools.Output, error) {
	b := op.Binding
	if b == nil {
		return tools.Output{}, apperr.New(apperr.BadGateway, "api_unreachable", "The operation has no call description; refresh the tool.")
	}
	var values map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &values); err != nil {
			return tools.Output{}, apperr.Invalidf("arguments", "must be a JSON object")
		}
	}
	base := e.URL
	if base == "" {
		base = b.Server
	}
	if base == "" {
		return tools.Output{}, apperr.New(apperr.BadGateway, "api_unreachable", "The OpenAPI document names no absolute server URL; set config.url.")
	}
	path, query, header := b.Path, url.Values{}, http.Header{}
	for _, p := range b.Params {
		v, ok := values[p.Name]
		if !ok || v == nil {
			continue
		}
		switch p.In {
		case openapi3.ParameterInPath:
			segment, err := pathValue(text(v), p.Reserved)
			if err != nil {
				return tools.OutputOf(p.Name+": "+err.Error(), true, e.MaxBytes), nil
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", segment)
		case openapi3.ParameterInQuery:
			addQuery(query, p.Name, v)
		case openapi3.ParameterInHeader:
			header.Set(p.Name, text(v))
		}
	}
	u, err := url.Parse(strings.TrimRight(base, "/") + path)
	if err != nil {
		return tools.Output{}, apperr.New(apperr.BadGateway, "api_unreachable", "The operation's URL is not valid.")
	}
	all := u.Query()
	for k, vs := range query {
		all[k] = vs
	}
	for k, vs := range e.Query {
		all[k] = vs
	}
	u.RawQuery = all.Encode()
	var body io.Reader
	if v, ok := values["body"]; ok && b.Body && v != nil {
		raw, _ := json.Marshal(v)
		body = bytes.NewReader(raw)
		header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, b.Method, u.String(), body)
	if err != nil {
		return tools.Output{}, apperr.New(apperr.BadGateway, "api_unreachable", "The operation's request could not be made.")
	}
	req.Header = header
	req.Header.Set("Accept", "application/json, text/plain, */*")
	for k, v := range e.Headers {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return tools.Output{}, failure(ctx, err, "The API could not be reached.")
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil && len(raw) == 0 {
		return tools.Output{}, failure(ctx, err, "The API's answer could not be read.")
	}
	answer := strings.ToValidUTF8(string(raw), "\uFFFD")
	if res.StatusCode >= 400 {
		return tools.OutputOf(fmt.Sprintf("HTTP %d: %s", res.StatusCode, answer), true, e.MaxBytes), nil
	}
	return tools.OutputOf(answer, false, e.MaxBytes), nil
}

// pathValue is a path parameter's value as it goes into the path: one escaped segment, or, when
// reserved, segments each escaped and joined by slashes, which may not climb out of the
// operation's path ("." and ".." segments are refused).
func pathValue(v string, reserved bool) (string, error) {
	if !reserved {
		return url.PathEscape(v), nil
	}
	segments := strings.Split(strings.TrimLeft(v, "/"), "/")
	for i, s := range segments {
		if s == "." || s == ".." {
			return "", errors.New(`may not have "." or ".." segments`)
		}
		segments[i] = url.PathEscape(s)
	}
	return strings.Join(segments, "/"), nil
}

// addQuery adds a query parameter's value as OpenAPI's default style (form, exploded) sends it:
// an array's items as repeated parameters, an object's properties as parameters of their own.
func addQuery(query url.Values, name string, v any) {
	switch x := v.(type) {
	case []any:
		for _, item := range x {
			query.Add(name, text(item))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			addQuery(query, k, x[k])
		}
	default:
		query.Set(name, text(v))
	}
}

// text is an argument as a URL or header value.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64, bool:
		return fmt.Sprint(x)
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// failure is err as the error a user sees: the API did not answer in time, or could not be
// reached (without the addresses or resolver details of the failure).
func failure(ctx context.Context, err error, unreachable string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return apperr.New(apperr.GatewayTimeout, "api_timeout", "The API did not answer in time.")
	}
	return &apperr.Error{Kind: apperr.BadGateway, Code: "api_unreachable", Message: unreachable, Err: err}
}
