package tools

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// A Postman collection (v2.0 or v2.1) is read as the OpenAPI document it describes: each
// request an operation, its path variables (:id) and query parameters its parameters, its
// headers header parameters (but the ones the tool's auth and the call set), its raw JSON body
// an example the body's schema is inferred from, its collection's variables resolving the
// server. The rest of the machinery then reads it as any OpenAPI document.

type postmanCollection struct {
	Info     struct{ Name, Schema string }
	Item     []postmanItem
	Variable []postmanVar
}

type postmanItem struct {
	Name        string
	Item        []postmanItem
	Request     *postmanRequest
	Description json.RawMessage
}

type postmanRequest struct {
	Method      string
	URL         json.RawMessage
	Header      []postmanVar
	Body        *struct{ Mode, Raw string }
	Description json.RawMessage
}

type postmanURL struct {
	Raw      string
	Protocol string
	Host     json.RawMessage
	Path     json.RawMessage
	Query    []postmanVar
}

type postmanVar struct {
	Key      string
	Value    any
	Disabled bool
}

var (
	postmanVarRef = regexp.MustCompile(`\{\{\s*([^}]+?)\s*\}\}`)
	postmanName   = regexp.MustCompile(`[^A-Za-z0-9-]+`)
)

// skippedHeaders are set by the call or the tool's auth, never by the model.
var skippedHeaders = map[string]bool{"content-type": true, "accept": true, "authorization": true, "content-length": true, "host": true}

// FromPostman is the OpenAPI document (JSON) of a Postman collection, or an Invalid error
// listing what is wrong with it (field collectionField).
func FromPostman(raw []byte, field string) (string, error) {
	if err := CheckDocument(raw, field); err != nil {
		return "", err
	}
	var c postmanCollection
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", apperr.Invalidf(field, "is not a Postman collection: %v", err)
	}
	if !strings.Contains(c.Info.Schema, "/collection/v2.") {
		return "", apperr.Invalidf(field, "must be a Postman collection v2.0 or v2.1 (info.schema %q)", c.Info.Schema)
	}
	vars := map[string]string{}
	for _, v := range c.Variable {
		vars[v.Key] = fmt.Sprint(v.Value)
	}
	doc := map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": strings.TrimSpace(c.Info.Name + " (Postman)"), "version": "1"}}
	paths := map[string]any{}
	var p apperr.Problems
	server := ""
	seen := map[string]bool{}
	var walk func(items []postmanItem, at string)
	walk = func(items []postmanItem, at string) {
		for i, it := range items {
			where := fmt.Sprintf("%s[%d]", at, i)
			if it.Request == nil {
				walk(it.Item, where+".item")
				continue
			}
			path, host, params, err := postmanPath(it.Request.URL, vars)
			if err != nil {
				p.Add(field, "%s (%s): %v", where, it.Name, err)
				continue
			}
			if server == "" {
				server = host
			}
			method := strings.ToLower(strings.TrimSpace(it.Request.Method))
			if method == "" {
				method = "get"
			}
			name := strings.Trim(postmanName.ReplaceAllString(it.Name, "_"), "_")
			if name == "" {
				name = method + "_" + strings.Trim(postmanName.ReplaceAllString(path, "_"), "_")
			}
			for base, n := name, 2; seen[name]; n++ {
				name = fmt.Sprintf("%s_%d", base, n)
			}
			seen[name] = true
			for _, h := range it.Request.Header {
				if !h.Disabled && !skippedHeaders[strings.ToLower(h.Key)] {
					params = append(params, map[string]any{"name": h.Key, "in": "header", "schema": map[string]any{"type": "string"}})
				}
			}
			op := map[string]any{"operationId": name, "summary": it.Name, "parameters": params,
				"responses": map[string]any{"default": map[string]any{"description": "The answer."}}}
			if d := postmanText(it.Request.Description); d != "" {
				op["description"] = d
			}
			if b := it.Request.Body; b != nil && b.Mode == "raw" && strings.TrimSpace(b.Raw) != "" {
				var example any
				if depth, _ := jsonShape([]byte(b.Raw)); depth > maxExampleDepth && json.Valid([]byte(b.Raw)) {
					p.Add(field, "%s (%s): the raw body is nested deeper than %d levels (the limit)", where, it.Name, maxExampleDepth)
					continue
				}
				if json.Unmarshal([]byte(b.Raw), &example) == nil {
					op["requestBody"] = map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": schemaOfExample(example)}}}
				}
			}
			item, _ := paths[path].(map[string]any)
			if item == nil {
				item = map[string]any{}
				paths[path] = item
			}
			if _, dup := item[method]; dup {
				p.Add(field, "%s (%s): a second %s %s", where, it.Name, strings.ToUpper(method), path)
				continue
			}
			item[method] = op
		}
	}
	walk(c.Item, "item")
	if err := p.Err(); err != nil {
		return "", err
	}
	if len(paths) == 0 {
		return "", apperr.Invalidf(field, "has no requests")
	}
	doc["paths"] = paths
	if server != "" {
		doc["servers"] = []any{map[string]any{"url": server}}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	if problem := documentProblem(out); problem != "" {
		return "", apperr.Invalidf(field, "as an OpenAPI document, %s", problem)
	}
	return string(out), nil
}

// postmanPath is a request URL's path in OpenAPI's form (/orders/{id}), its server (scheme and
// host, when its variables resolve) and its path and query parameters.
func postmanPath(raw json.RawMessage, vars map[string]string) (string, string, []any, error) {
	var u postmanURL
	var text string
	if json.Unmarshal(raw, &text) == nil {
		u.Raw = text
	} else if err := json.Unmarshal(raw, &u); err != nil {
		return "", "", nil, fmt.Errorf("url is neither a string nor an object")
	}
	resolve := func(s string) string {
		return postmanVarRef.ReplaceAllStringFunc(s, func(m string) string {
			if v, ok := vars[postmanVarRef.FindStringSubmatch(m)[1]]; ok {
				return v
			}
			return m
		})
	}
	var segments []string
	var host string
	if u.Path != nil {
		var parts []any
		_ = json.Unmarshal(u.Path, &parts)
		for _, s := range parts {
			if str, ok := s.(string); ok {
				segments = append(segments, str)
			}
		}
		var hosts []string
		if json.Unmarshal(u.Host, &hosts) != nil {
			var one string
			_ = json.Unmarshal(u.Host, &one)
			hosts = []string{one}
		}
		host = resolve(strings.Join(hosts, "."))
		if u.Protocol != "" && host != "" {
			host = u.Protocol + "://" + host
		}
	} else {
		rest := resolve(strings.SplitN(u.Raw, "?", 2)[0])
		if i := strings.Index(rest, "://"); i >= 0 {
			if j := strings.Index(rest[i+3:], "/"); j >= 0 {
				host, rest = rest[:i+3+j], rest[i+3+j:]
			} else {
				host, rest = rest, ""
			}
		}
		segments = strings.Split(strings.Trim(rest, "/"), "/")
	}
	if strings.Contains(host, "{{") || (host != "" && !strings.Contains(host, "://")) {
		host = ""
	}
	var params []any
	var path strings.Builder
	for _, s := range segments {
		if s == "" {
			continue
		}
		name := ""
		switch {
		case strings.HasPrefix(s, ":"):
			name = s[1:]
		case postmanVarRef.MatchString(s) && postmanVarRef.FindString(s) == s:
			name = postmanVarRef.FindStringSubmatch(s)[1]
		}
		if name != "" {
			path.WriteString("/{" + name + "}")
			params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
			continue
		}
		path.WriteString("/" + s)
	}
	if path.Len() == 0 {
		path.WriteString("/")
	}
	query := u.Query
	if query == nil {
		query = rawQuery(u.Raw)
	}
	seen := map[string]bool{}
	for _, q := range query {
		if !q.Disabled && q.Key != "" && !seen[q.Key] {
			seen[q.Key] = true
			params = append(params, map[string]any{"name": q.Key, "in": "query", "schema": map[string]any{"type": "string"}})
		}
	}
	return path.String(), host, params, nil
}

// rawQuery is the query of a URL given only as its text (https://x/ping?v=1&q={{term}}): its
// parameters' names, values left as written (they may be variables).
func rawQuery(raw string) []postmanVar {
	_, q, ok := strings.Cut(raw, "?")
	if !ok {
		return nil
	}
	q, _, _ = strings.Cut(q, "#")
	var out []postmanVar
	for pair := range strings.SplitSeq(q, "&") {
		key, value, _ := strings.Cut(pair, "=")
		if name, err := url.QueryUnescape(key); err == nil && name != "" {
			out = append(out, postmanVar{Key: name, Value: value})
		}
	}
	return out
}

// postmanText is a description, given as text or as {content}.
func postmanText(raw json.RawMessage) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return strings.TrimSpace(text)
	}
	var d struct{ Content string }
	_ = json.Unmarshal(raw, &d)
	return strings.TrimSpace(d.Content)
}

// maxExampleDepth bounds the nesting of a request's raw JSON body: its schema, two levels for
// each of the example's, sits eight levels deep in the document, which stays within MaxDepth.
const maxExampleDepth = (MaxDepth - 8) / 2

// schemaOfExample is a JSON schema a value is an example of.
func schemaOfExample(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		props := map[string]any{}
		for k, e := range x {
			props[k] = schemaOfExample(e)
		}
		return map[string]any{"type": "object", "properties": props}
	case []any:
		if len(x) > 0 {
			return map[string]any{"type": "array", "items": schemaOfExample(x[0])}
		}
		return map[string]any{"type": "array"}
	case float64:
		if x == float64(int64(x)) {
			return map[string]any{"type": "integer"}
		}
		return map[string]any{"type": "number"}
	case bool:
		return map[string]any{"type": "boolean"}
	case string:
		return map[string]any{"type": "string"}
	}
	return map[string]any{}
}
