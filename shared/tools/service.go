package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/kit/secrets"
)

// Service manages agents' tools and calls their operations for agent runs.
type Service struct {
	log  *slog.Logger
	repo Repo
	// connectors talk to the servers of each type of tool.
	connectors map[string]Connector
	box        secrets.Box
	now        func() time.Time
	clock      func() time.Time
}

// NewService returns the tools service: connectors reach the servers of each type of tool (by
// TypeMCP, TypeOpenAPI), box seals credentials.
func NewService(repo Repo, connectors map[string]Connector, box secrets.Box, log *slog.Logger) *Service {
	return &Service{log: log, repo: repo, connectors: connectors, box: box,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }, clock: time.Now}
}

// Create adds a tool to the agent with the operations read from its server: a server that
// cannot be reached leaves the tool in StatusError with the reason, to be fixed and refreshed;
// an OpenAPI document that is not one is refused with its problems, and so is a remote A2A
// agent whose card cannot be read (unreachable, at an address the outbound policy refuses).
func (s *Service) Create(ctx context.Context, projectID, botID string, in Input) (Tool, error) {
	t := Tool{ID: ids.New(), Revision: ids.New(), ProjectID: projectID, BotID: botID, Status: StatusNew, Operations: []Operation{}, Disabled: []string{},
		Settings: Settings{Approval: ApprovalAuto, TimeoutSeconds: DefaultTimeout, MaxResultBytes: DefaultResultBytes}}
	if err := s.apply(&t, in); err != nil {
		return Tool{}, err
	}
	if t.Type == TypeA2A {
		t.Settings.TimeoutSeconds = DefaultA2ATimeout
	}
	n, err := s.repo.Count(ctx, projectID, botID)
	if err != nil {
		return Tool{}, err
	}
	if n >= MaxPerAgent {
		return Tool{}, apperr.New(apperr.Conflict, "tool_limit", fmt.Sprintf("An agent has at most %d tools; delete one first.", MaxPerAgent))
	}
	if t, err = s.read(ctx, t); refused(err) || (err != nil && t.Type == TypeA2A) {
		return Tool{}, err
	}
	t.CreatedAt, t.UpdatedAt = s.now(), s.now()
	if err := s.repo.Insert(ctx, t); err != nil {
		return Tool{}, err
	}
	return t.view(), nil
}

// refused reports whether a tool's read failed because of what it was given (an OpenAPI
// document that is not one) or of the platform (the store, the secrets key): not a server's
// failure, which the tool keeps as its status.
func refused(err error) bool {
	k := apperr.As(err).Kind
	return err != nil && (k == apperr.Invalid || k == apperr.Unavailable)
}

// Update replaces the tool's name, description, type and config with those given (a field
// left out keeps its value; credentials left out are kept while the auth type stays, and while
// the tool's calls go to the origins they went to: credentials kept for another origin are an
// Invalid error naming them), then reads its operations again.
func (s *Service) Update(ctx context.Context, projectID, botID, id string, in Input) (Tool, error) {
	t, err := s.repo.Get(ctx, projectID, botID, id)
	if err != nil {
		return Tool{}, err
	}
	creds, err := s.open(t)
	if err != nil {
		return Tool{}, err
	}
	old := t
	keeps := kept{headers: in.Config.Headers == nil && len(creds.Headers) > 0}
	if in.Name == "" {
		in.Name = t.Name
	}
	if in.Description == "" {
		in.Description = t.Description
	}
	if in.Type == "" {
		in.Type = t.Type
	}
	if in.Config.URL == "" && in.Config.MCPServerID == "" {
		in.Config.URL, in.Config.MCPServerID = t.Config.URL, t.Config.MCPServerID
	}
	if in.Config.Transport == "" {
		in.Config.Transport = t.Config.Transport
	}
	if in.Config.Method == "" {
		in.Config.Method = t.Config.Method
	}
	if in.Config.InputSchema == nil {
		in.Config.InputSchema = t.Config.InputSchema
	}
	if in.Config.Spec.V == nil && in.Config.SpecURL == "" {
		if in.Config.SpecURL = t.Config.SpecURL; in.Config.SpecURL == "" && t.Spec != "" {
			in.Config.Spec.V = t.Spec
		}
	}
	if in.Config.Headers == nil {
		in.Config.Headers = creds.Headers
	}
	switch a := in.Config.Auth; {
	case a == nil:
		in.Config.Auth = &AuthInput{Type: t.Config.Auth.Type, Name: t.Config.Auth.Name, Username: t.Config.Auth.Username}
		in.Config.Auth.Token, in.Config.Auth.Password = creds.Secret, creds.Secret
		keeps.secret = creds.Secret != ""
	case cmp(a.Type, AuthNone) == t.Config.Auth.Type && a.Token == "" && a.Password == "":
		a.Token, a.Password = creds.Secret, creds.Secret
		keeps.secret = creds.Secret != ""
	}
	if err := s.apply(&t, in); err != nil {
		return Tool{}, err
	}
	// An MCP server is read with the credentials: where it is must be checked first. An
	// OpenAPI document is read without them, and names where the calls go.
	if err := keeps.elsewhere(old, t); err != nil {
		return Tool{}, err
	}
	if t, err = s.read(ctx, t); refused(err) {
		return Tool{}, err
	}
	if err := keeps.elsewhere(old, t); err != nil {
		return Tool{}, err
	}
	t, err = s.repo.Set(ctx, projectID, botID, id, revised(map[string]any{"name": t.Name, "key": t.Key, "description": t.Description,
		"type": t.Type, "config": t.Config, "sealed": t.Sealed, "spec": t.Spec, "operations": t.Operations, "status": t.Status,
		"last_error": t.LastError, "refreshed_at": t.RefreshedAt, "updated_at": s.now()}))
	return t.view(), err
}

// kept says which of a tool's stored credentials an update keeps without their being given.
type kept struct{ secret, headers bool }

// elsewhere is an Invalid error naming the credentials k keeps when t's calls go to an origin
// (scheme, host and port) that old's did not: credentials are given again to go elsewhere.
func (k kept) elsewhere(old, t Tool) error {
	if !k.secret && !k.headers {
		return nil
	}
	before := origins(old)
	for _, o := range origins(t) {
		if slices.Contains(before, o) {
			continue
		}
		var p apperr.Problems
		if k.secret {
			field := "config.auth.token"
			if t.Config.Auth.Type == AuthBasic {
				field = "config.auth.password"
			}
			p.Add(field, "is required again: the tool's calls move to another host (%s)", o)
		}
		if k.headers {
			p.Add("config.headers", "are required again: the tool's calls move to another host (%s)", o)
		}
		return p.Err()
	}
	return nil
}

// origins are the origins (scheme://host:port) t's calls, and its credentials, go to: its URL,
// else (an OpenAPI tool's) the servers its document names, and besides (a remote A2A agent's)
// the endpoint its card names; none for a tool that names a hosted server, whose own
// credentials it uses.
func origins(t Tool) []string {
	if t.Config.MCPServerID != "" {
		return nil
	}
	urls := []string{t.Config.URL}
	if t.Config.URL == "" || t.Type == TypeA2A {
		for _, o := range t.Operations {
			if o.Binding != nil {
				urls = append(urls, o.Binding.Server)
			}
		}
	}
	var out []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			continue
		}
		scheme, port := strings.ToLower(u.Scheme), u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[scheme]
		}
		if o := scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port; !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

func cmp(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// apply checks in and sets it on t, sealing its credentials for t.
func (s *Service) apply(t *Tool, in Input) error {
	var p apperr.Problems
	name, desc := strings.TrimSpace(in.Name), strings.TrimSpace(in.Description)
	switch {
	case name == "":
		p.Add("name", "is required")
	case utf8.RuneCountInString(name) > MaxNameLength:
		p.Add("name", "must be at most %d characters", MaxNameLength)
	case keyOf(name) == "":
		p.Add("name", "must contain a letter or a digit")
	}
	if utf8.RuneCountInString(desc) > MaxDescription {
		p.Add("description", "must be at most %d characters", MaxDescription)
	}
	typ := strings.ToLower(strings.TrimSpace(in.Type))
	switch typ {
	case TypeMCP, TypeOpenAPI, TypeHTTP, TypeA2A:
	case "":
		p.Add("type", "is required: %s, %s, %s or %s", TypeMCP, TypeOpenAPI, TypeHTTP, TypeA2A)
	default:
		p.Add("type", "must be %s, %s, %s or %s", TypeMCP, TypeOpenAPI, TypeHTTP, TypeA2A)
	}
	c := in.Config
	serverID, rawURL := strings.TrimSpace(c.MCPServerID), strings.TrimSpace(c.URL)
	switch {
	case serverID == "":
	case t.BotID == hosted:
		p.Add("config.mcp_server_id", "a hosted server cannot name another")
	case typ != TypeMCP:
		p.Add("config.mcp_server_id", "only a tool of type %s names a hosted server", TypeMCP)
	default:
		rawURL = ""
	}
	switch {
	case serverID != "":
	case rawURL == "" && typ == TypeOpenAPI:
	case rawURL == "":
		p.Add("config.url", "is required")
	default:
		if problem := httpURL(rawURL); problem != "" {
			p.Add("config.url", "%s", problem)
		}
	}
	transport := strings.ToLower(strings.TrimSpace(c.Transport))
	switch {
	case typ != TypeMCP || serverID != "":
		transport = ""
	case transport == "":
		transport = TransportStreamable
	case transport != TransportStreamable && transport != TransportSSE:
		p.Add("config.transport", "must be %s or %s", TransportStreamable, TransportSSE)
	}
	spec, specURL, method := "", "", ""
	switch typ {
	case TypeOpenAPI:
		spec, specURL = specOf(c, &p)
	case TypeHTTP:
		method, spec = endpointSpec(name, desc, rawURL, c, &p)
	}
	creds := credentials{Headers: map[string]string{}}
	headers := make([]string, 0, len(c.Headers))
	if len(c.Headers) > MaxHeaders {
		p.Add("config.headers", "must have at most %d headers", MaxHeaders)
	}
	for k, v := range c.Headers {
		name := http.CanonicalHeaderKey(strings.TrimSpace(k))
		if !validHeader(name) || strings.ContainsAny(v, "\r\n") {
			p.Add("config.headers", "%q is not a header name and value", k)
			continue
		}
		creds.Headers[name] = v
		headers = append(headers, name)
	}
	slices.Sort(headers)
	auth := Auth{Type: AuthNone}
	if a := c.Auth; a != nil {
		auth.Type = strings.ToLower(strings.TrimSpace(cmp(a.Type, AuthNone)))
		switch auth.Type {
		case AuthNone:
		case AuthBearer:
			creds.Secret = a.Token
		case AuthHeader, AuthQuery:
			auth.Name, creds.Secret = strings.TrimSpace(a.Name), a.Token
			if auth.Name == "" {
				p.Add("config.auth.name", "is required: the %s that carries the token", map[string]string{AuthHeader: "header", AuthQuery: "query parameter"}[auth.Type])
			} else if auth.Type == AuthHeader && !validHeader(auth.Name) {
				p.Add("config.auth.name", "is not a header name")
			}
		case AuthBasic:
			auth.Username, creds.Secret = strings.TrimSpace(a.Username), a.Password
			if auth.Username == "" {
				p.Add("config.auth.username", "is required")
			}
		default:
			p.Add("config.auth.type", "must be one of none, bearer, header, query, basic")
		}
		if auth.Type != AuthNone && creds.Secret == "" {
			field := "token"
			if auth.Type == AuthBasic {
				field = "password"
			}
			p.Add("config.auth."+field, "is required for %s auth", auth.Type)
		}
		if strings.ContainsAny(creds.Secret, "\r\n") {
			p.Add("config.auth", "the secret must not contain line breaks")
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	auth.Set = creds.Secret != ""
	t.Name, t.Key, t.Description, t.Type, t.Spec = name, keyOf(name), desc, typ, spec
	t.Config = Config{URL: rawURL, Transport: transport, SpecURL: specURL, MCPServerID: serverID, Method: method, Auth: auth, Headers: headers}
	if typ == TypeHTTP {
		t.Config.InputSchema = c.InputSchema
	}
	t.Sealed = ""
	if len(creds.Headers) > 0 || creds.Secret != "" {
		if !s.box.Ready() {
			return apperr.New(apperr.Unavailable, "secrets_key_missing",
				"This deployment has no key to store credentials with (AGENTPLANE_SECRETS_KEY); ask its operator to set one.")
		}
		plain, _ := json.Marshal(creds)
		sealed, err := s.box.Seal(plain, t.ID)
		if err != nil {
			return err
		}
		t.Sealed = sealed
	}
	return nil
}

// httpURL is what is wrong with raw as the URL of a server; empty when nothing is.
func httpURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "must be an http or https URL"
	case u.User != nil:
		return "must not carry credentials; use config.auth"
	}
	return ""
}

// specOf is an OpenAPI tool's document as c gives it (text, or an object as JSON text), or the
// URL to read it from.
func specOf(c ConfigInput, p *apperr.Problems) (spec, specURL string) {
	specURL = strings.TrimSpace(c.SpecURL)
	switch v := c.Spec.V; {
	case v == nil && specURL == "":
		p.Add("config.spec", "is required: the OpenAPI document (JSON or YAML), or config.spec_url")
	case v != nil && specURL != "":
		p.Add("config.spec", "give the document or config.spec_url, not both")
	case v == nil:
		if problem := httpURL(specURL); problem != "" {
			p.Add("config.spec_url", "%s", problem)
		}
	default:
		if text, ok := v.(string); ok {
			spec = strings.TrimSpace(text)
		} else if _, ok := v.(map[string]any); ok {
			raw, _ := json.Marshal(v)
			spec = string(raw)
		} else {
			p.Add("config.spec", "must be the OpenAPI document, as an object or as JSON or YAML text")
		}
		if len(spec) > MaxSpecBytes {
			p.Add("config.spec", "must be at most %d bytes", MaxSpecBytes)
		}
	}
	return spec, specURL
}

// httpMethods are the methods of an http tool's endpoint.
var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// endpointSpec is the method of an http tool (a single endpoint) and the OpenAPI document that
// describes it: one operation, "call", whose arguments are the query parameters of a GET (the
// input schema's properties) or the JSON body of the others ("body", of the input schema).
func endpointSpec(name, desc, rawURL string, c ConfigInput, p *apperr.Problems) (string, string) {
	method := strings.ToUpper(cmp(strings.TrimSpace(c.Method), http.MethodPost))
	if !slices.Contains(httpMethods, method) {
		p.Add("config.method", "must be one of %s", strings.Join(httpMethods, ", "))
	}
	schema := map[string]any(c.InputSchema)
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	if ParseSchema(schema) == nil {
		p.Add("config.input_schema", "must be a JSON schema")
	}
	u, err := url.Parse(rawURL)
	if err != nil || rawURL == "" {
		return method, ""
	}
	op := map[string]any{"operationId": "call", "summary": cmp(desc, name), "responses": map[string]any{"default": map[string]any{"description": "The answer."}}}
	if method == http.MethodGet {
		var params []any
		props, _ := schema["properties"].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(props)) {
			params = append(params, map[string]any{"name": k, "in": "query", "schema": props[k]})
		}
		op["parameters"] = params
	} else {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
	}
	path := cmp(u.EscapedPath(), "/")
	doc := map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": name, "version": "1"},
		"servers": []any{map[string]any{"url": u.Scheme + "://" + u.Host}}, "paths": map[string]any{path: map[string]any{strings.ToLower(method): op}}}
	raw, _ := json.Marshal(doc)
	return method, string(raw)
}

func validHeader(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r > 127 || !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// open returns the tool's credentials.
func (s *Service) open(t Tool) (credentials, error) {
	var c credentials
	if t.Sealed == "" {
		return c, nil
	}
	plain, err := s.box.Open(t.Sealed, t.ID)
	if err != nil {
		return c, apperr.New(apperr.Unavailable, "secrets_unreadable",
			"The tool's credentials cannot be read with this deployment's key (AGENTPLANE_SECRETS_KEY changed?); give them again with an update.")
	}
	return c, json.Unmarshal(plain, &c)
}

// endpoint is how the connector reaches t, credentials included.
func (s *Service) endpoint(t Tool) (Endpoint, error) {
	c, err := s.open(t)
	if err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{URL: t.Config.URL, Transport: t.Config.Transport, Headers: map[string]string{}, Spec: t.Spec, SpecURL: t.Config.SpecURL,
		Timeout:  time.Duration(cmpInt(t.Settings.TimeoutSeconds, DefaultTimeout)) * time.Second,
		MaxBytes: cmpInt(t.Settings.MaxResultBytes, DefaultResultBytes)}
	for k, v := range c.Headers {
		e.Headers[k] = v
	}
	if t.Type == TypeHTTP {
		// The endpoint's own document names its server and path.
		e.URL = ""
	}
	switch t.Config.Auth.Type {
	case AuthBearer:
		e.Headers["Authorization"] = "Bearer " + c.Secret
	case AuthHeader:
		e.Headers[t.Config.Auth.Name] = c.Secret
	case AuthBasic:
		e.Headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(t.Config.Auth.Username+":"+c.Secret))
	case AuthQuery:
		e.Query = url.Values{t.Config.Auth.Name: {c.Secret}}
	}
	return e, nil
}

func cmpInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Get returns a tool of the agent.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Tool, error) {
	t, err := s.repo.Get(ctx, projectID, botID, strings.TrimSpace(id))
	return t.view(), err
}

// List returns a page of the agent's tools, of one type when typ is given.
func (s *Service) List(ctx context.Context, projectID, botID, typ string, page paging.Page) ([]Tool, int, error) {
	list, total, err := s.repo.List(ctx, projectID, botID, strings.ToLower(strings.TrimSpace(typ)), page)
	for i := range list {
		list[i] = list[i].view()
	}
	return list, total, err
}

// Delete removes a tool of the agent.
func (s *Service) Delete(ctx context.Context, projectID, botID, id string) error {
	return s.repo.Delete(ctx, projectID, botID, strings.TrimSpace(id))
}

// Configure changes how the agent uses the tool: approval policies, limits, allowed operations.
func (s *Service) Configure(ctx context.Context, projectID, botID, id string, in SettingsInput) (Tool, error) {
	t, err := s.repo.Get(ctx, projectID, botID, strings.TrimSpace(id))
	if err != nil {
		return Tool{}, err
	}
	st := t.Settings
	var p apperr.Problems
	policy := func(field, v string) string {
		v = strings.ToLower(strings.TrimSpace(v))
		if v != ApprovalAuto && v != ApprovalAlways && v != ApprovalNever {
			p.Add(field, "must be auto, always or never")
		}
		return v
	}
	if in.Approval != nil {
		st.Approval = policy("settings.approval", *in.Approval)
	}
	if in.Operations != nil {
		ops := map[string]any{}
		for name, v := range in.Operations {
			text, ok := v.(string)
			if !ok {
				p.Add("settings.operations."+name, "must be auto, always or never")
				continue
			}
			ops[name] = policy("settings.operations."+name, text)
		}
		if len(ops) > MaxOperations {
			p.Add("settings.operations", "must name at most %d operations", MaxOperations)
		}
		st.Operations = ops
	}
	if in.TimeoutSeconds != nil {
		if st.TimeoutSeconds = *in.TimeoutSeconds; st.TimeoutSeconds < 1 || st.TimeoutSeconds > MaxTimeout {
			p.Add("settings.timeout_seconds", "must be from 1 to %d", MaxTimeout)
		}
	}
	if in.MaxResultBytes != nil {
		if st.MaxResultBytes = *in.MaxResultBytes; st.MaxResultBytes < MinResultBytes || st.MaxResultBytes > MaxResultBytes {
			p.Add("settings.max_result_bytes", "must be from %d to %d", MinResultBytes, MaxResultBytes)
		}
	}
	if in.AllowedOperations != nil {
		st.AllowedOperations = []string{}
		for _, op := range *in.AllowedOperations {
			if op = strings.TrimSpace(op); op != "" && !slices.Contains(st.AllowedOperations, op) {
				st.AllowedOperations = append(st.AllowedOperations, op)
			}
		}
		if len(st.AllowedOperations) > MaxOperations {
			p.Add("settings.allowed_operations", "must name at most %d operations", MaxOperations)
		}
	}
	if err := p.Err(); err != nil {
		return Tool{}, err
	}
	t, err = s.repo.Set(ctx, projectID, botID, t.ID, revised(map[string]any{"settings": st, "updated_at": s.now()}))
	return t.view(), err
}

// Toggle turns one operation of the tool on or off.
func (s *Service) Toggle(ctx context.Context, projectID, botID, id, operation string, active *bool) (Tool, error) {
	var p apperr.Problems
	if operation = strings.TrimSpace(operation); operation == "" {
		p.Add("tool_name", "is required: the operation to turn on or off")
	}
	if active == nil {
		p.Add("active", "is required: true or false")
	}
	if err := p.Err(); err != nil {
		return Tool{}, err
	}
	t, err := s.repo.Get(ctx, projectID, botID, strings.TrimSpace(id))
	if err != nil {
		return Tool{}, err
	}
	if !slices.ContainsFunc(t.Operations, func(o Operation) bool { return o.Name == operation }) {
		return Tool{}, apperr.New(apperr.NotFound, "operation_not_found",
			fmt.Sprintf("The tool has no operation %q (refresh it if the server has a new one).", operation))
	}
	disabled := slices.DeleteFunc(slices.Clone(t.Disabled), func(d string) bool { return d == operation })
	if !*active {
		disabled = append(disabled, operation)
	}
	t, err = s.repo.Set(ctx, projectID, botID, t.ID, revised(map[string]any{"disabled": disabled, "updated_at": s.now()}))
	return t.view(), err
}

// Refresh reads the tool's operations from its server again. A server that cannot be read
// answers its error; the tool keeps the operations read before and says why in LastError.
func (s *Service) Refresh(ctx context.Context, projectID, botID, id string) (Tool, error) {
	t, err := s.repo.Get(ctx, projectID, botID, strings.TrimSpace(id))
	if err != nil {
		return Tool{}, err
	}
	t, rerr := s.read(ctx, t)
	if apperr.As(rerr).Kind == apperr.Unavailable {
		return Tool{}, rerr
	}
	stored, err := s.repo.Set(ctx, projectID, botID, t.ID, map[string]any{"spec": t.Spec, "operations": t.Operations, "status": t.Status,
		"last_error": t.LastError, "refreshed_at": t.RefreshedAt})
	if err != nil {
		return Tool{}, err
	}
	return stored.view(), rerr
}

// read lists t's operations into it, or the reason it could not into its status (keeping the
// operations read before), and returns that reason.
func (s *Service) read(ctx context.Context, t Tool) (Tool, error) {
	ops, spec, err := s.list(ctx, t)
	now := s.now()
	t.RefreshedAt = &now
	if err != nil {
		t.Status, t.LastError = StatusError, apperr.As(err).Message
		return t, err
	}
	t.Status, t.LastError, t.Operations = StatusReady, "", ops
	if spec != "" {
		t.Spec = spec
	}
	return t, nil
}

// list reads t's operations from its server, and the document it read there if any. A tool
// that names a hosted server of its project has that server's operations.
func (s *Service) list(ctx context.Context, t Tool) ([]Operation, string, error) {
	if id := t.Config.MCPServerID; id != "" {
		h, err := s.repo.Get(ctx, t.ProjectID, hosted, id)
		if apperr.As(err).Kind == apperr.NotFound {
			return nil, "", apperr.Invalidf("config.mcp_server_id", "is not a hosted MCP server of the project")
		}
		return h.Operations, "", err
	}
	e, err := s.endpoint(t)
	if err != nil {
		return nil, "", err
	}
	c, ok := s.connectors[t.Type]
	if !ok {
		return nil, "", apperr.Invalidf("type", "%s tools are not available", t.Type)
	}
	ops, spec, err := c.List(ctx, e)
	if err != nil {
		return nil, "", err
	}
	if len(ops) > MaxOperations {
		ops = ops[:MaxOperations]
	}
	for i := range ops {
		if ops[i].InputSchema == nil {
			ops[i].InputSchema = map[string]any{"type": "object"}
		}
		if problem := SchemaProblem(ops[i].InputSchema); problem != "" {
			return nil, "", apperr.Invalidf("operations", "the input schema of %s %s", ops[i].Name, problem)
		}
		if len(ops[i].Description) > MaxDescription {
			ops[i].Description = strings.ToValidUTF8(ops[i].Description[:MaxDescription], "")
		}
	}
	return ops, spec, nil
}

// TestResult is what a tool test found.
type TestResult struct {
	OK         bool          `json:"ok"`
	Operations []Operation   `json:"operations"`
	Error      *apperr.Error `json:"error,omitempty"`
	DurationMS int64         `json:"duration_ms"`
}

// Test connects to the tool's server and lists its operations, without storing anything: what
// it found, or why it could not.
func (s *Service) Test(ctx context.Context, projectID, botID, id string) (TestResult, error) {
	t, err := s.repo.Get(ctx, projectID, botID, strings.TrimSpace(id))
	if err != nil {
		return TestResult{}, err
	}
	started := s.clock()
	ops, _, err := s.list(ctx, t)
	t.Operations = ops
	res := TestResult{OK: err == nil, Operations: t.view().Operations, DurationMS: time.Since(started).Milliseconds()}
	if err != nil {
		if e := apperr.As(err); e.Kind == apperr.Unavailable && e.Code == "dependency_unavailable" {
			return TestResult{}, err
		}
		res.Error, res.Operations = publicError(err), []Operation{}
	}
	return res, nil
}

// publicError is err as a user may see it: its kind, code and message, not what it wraps.
func publicError(err error) *apperr.Error {
	e := apperr.As(err)
	return &apperr.Error{Kind: e.Kind, Code: e.Code, Message: e.Message, Details: e.Details}
}

// view is t as a user reads it: each operation's effective state.
func (t Tool) view() Tool {
	if t.Operations == nil {
		t.Operations = []Operation{}
	}
	if t.Config.Headers == nil {
		t.Config.Headers = []string{}
	}
	if t.Settings.AllowedOperations == nil {
		t.Settings.AllowedOperations = []string{}
	}
	if t.Settings.Operations == nil {
		t.Settings.Operations = map[string]any{}
	}
	ops := make([]Operation, len(t.Operations))
	for i, o := range t.Operations {
		o.Active = t.active(o.Name)
		o.Approval = t.policy(o.Name)
		ops[i] = o
	}
	t.Operations = ops
	return t
}

// active reports whether the agent is offered the operation.
func (t Tool) active(op string) bool {
	if slices.Contains(t.Disabled, op) {
		return false
	}
	return len(t.Settings.AllowedOperations) == 0 || slices.Contains(t.Settings.AllowedOperations, op)
}

// policy is the approval policy of the operation.
func (t Tool) policy(op string) string {
	if v, ok := t.Settings.Operations[op].(string); ok && v != "" {
		return v
	}
	return cmp(t.Settings.Approval, ApprovalAuto)
}

// Offer is one operation an agent run may call.
type Offer struct {
	ToolID string
	// Revision, when set, is the tool's revision the call is held to.
	Revision string
	// Label is the tool's name (the server label of replies), Operation the operation's.
	Label     string
	Operation string
	// Name is what the model calls it by (CallName).
	Name        string
	Description string
	Schema      map[string]any
	ReadOnly    bool
	// Approval is the operation's policy: ApprovalAuto, ApprovalAlways or ApprovalNever.
	Approval string
}

// Offers are the operations of the agent's tools that its runs may call: the active ones of
// its tools that were read, as set (the tools of the version the run serves) has them, each
// offer held to its tool's revision; the tools as they are for a nil set, each offer calling
// its tool as it is then.
func (s *Service) Offers(ctx context.Context, projectID, botID string, set []State) ([]Offer, error) {
	all, err := s.repo.All(ctx, projectID, botID)
	if err != nil {
		return nil, err
	}
	if all, err = s.at(ctx, projectID, botID, all, set); err != nil {
		return nil, err
	}
	var out []Offer
	seen := map[string]bool{}
	for _, t := range all {
		for _, o := range offers(t, seen, s.log) {
			if set == nil {
				o.Revision = ""
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// offers are the active operations of t, but those whose names seen has (it takes theirs) and
// those whose input schemas are too large to offer (stored before their size was bounded,
// which log is told of).
func offers(t Tool, seen map[string]bool, log *slog.Logger) []Offer {
	var out []Offer
	for _, o := range t.Operations {
		name := CallName(t.Key, o.Name)
		if !t.active(o.Name) || seen[name] {
			continue
		}
		if problem := SchemaProblem(o.InputSchema); problem != "" {
			log.Warn("tool operation not offered: its input schema is too large; refresh the tool", "tool_id", t.ID, "operation", o.Name, "problem", problem)
			continue
		}
		if seen != nil {
			seen[name] = true
		}
		desc := o.Description
		if t.Description != "" {
			desc = fmt.Sprintf("%s (%s: %s)", desc, t.Name, t.Description)
		}
		out = append(out, Offer{ToolID: t.ID, Revision: t.Revision, Label: t.Name, Operation: o.Name, Name: name, Description: desc,
			Schema: o.InputSchema, ReadOnly: o.ReadOnly, Approval: t.policy(o.Name)})
	}
	return out
}

// ErrCall marks a call that did not get an answer from the tool's server (unreachable, too
// slow, not speaking its protocol): what the model is told, not a failure of the run.
var ErrCall = errors.New("the tool could not be called")

// Invoke calls an offered operation for an agent run (execution) of the agent, with the
// model's arguments, and records the call: the tool as the offer's revision has it (the tool
// as it is when the offer's revision is its own). A call the server did not answer is an error
// wrapping ErrCall with the reason; a store failure is returned as it is.
func (s *Service) Invoke(ctx context.Context, projectID, botID string, o Offer, executionID string, args json.RawMessage) (Output, error) {
	t, err := s.repo.Get(ctx, projectID, botID, o.ToolID)
	if (err == nil || apperr.IsNotFound(err)) && o.Revision != "" && t.Revision != o.Revision {
		t, err = s.repo.Revision(ctx, projectID, botID, o.Revision)
	}
	if err != nil {
		if apperr.As(err).Kind == apperr.NotFound {
			return Output{}, fmt.Errorf("%w: the tool %s was removed", ErrCall, o.Label)
		}
		return Output{}, err
	}
	// A tool that names a hosted server calls it, within the tool's own limits.
	target := t
	if id := t.Config.MCPServerID; id != "" {
		if target, err = s.repo.Get(ctx, projectID, hosted, id); err != nil {
			if apperr.As(err).Kind == apperr.NotFound {
				return Output{}, fmt.Errorf("%w: the hosted MCP server of %s was removed", ErrCall, o.Label)
			}
			return Output{}, err
		}
	}
	i := slices.IndexFunc(target.Operations, func(op Operation) bool { return op.Name == o.Operation })
	if i < 0 || !t.active(o.Operation) {
		return Output{}, fmt.Errorf("%w: the operation %s of %s is no longer offered", ErrCall, o.Operation, o.Label)
	}
	if problem := SchemaProblem(target.Operations[i].InputSchema); problem != "" {
		return Output{}, fmt.Errorf("%w: the input schema of the operation %s of %s %s", ErrCall, o.Operation, o.Label, problem)
	}
	conn, ok := s.connectors[target.Type]
	if !ok {
		return Output{}, fmt.Errorf("%w: %s tools are not available", ErrCall, target.Type)
	}
	e, err := s.endpoint(target)
	if err != nil {
		return Output{}, fmt.Errorf("%w: %s", ErrCall, apperr.As(err).Message)
	}
	e.Timeout = time.Duration(cmpInt(t.Settings.TimeoutSeconds, DefaultTimeout)) * time.Second
	e.MaxBytes = cmpInt(t.Settings.MaxResultBytes, DefaultResultBytes)
	op := target.Operations[i]
	started := s.clock()
	var out Output
	cerr := Check(ParseSchema(op.InputSchema), string(args))
	refused := cerr != nil
	if !refused {
		out, cerr = conn.Call(ctx, e, op, args)
	}
	c := Call{ID: ids.New(), ProjectID: projectID, BotID: botID, ToolID: t.ID, Operation: o.Operation, ExecutionID: executionID,
		DurationMS: time.Since(started).Milliseconds(), Outcome: OutcomeOK, Bytes: out.Bytes, At: s.now()}
	if target.ID != t.ID {
		c.ServerID = target.ID
	}
	switch {
	case refused:
		c.Outcome = OutcomeRefused
	case cerr != nil:
		c.Outcome = OutcomeFailed
	case out.IsError:
		c.Outcome = OutcomeToolError
	}
	if err := s.repo.RecordCall(context.WithoutCancel(ctx), c); err != nil {
		// The call happened: failing the run here would make it again when the run is retried.
		s.log.Warn("tool call not recorded", "tool_id", t.ID, "operation", o.Operation, "execution_id", executionID, "error", err)
	}
	switch {
	case refused:
		return Output{}, fmt.Errorf("%w: %v", ErrCall, cerr)
	case cerr != nil:
		return Output{}, fmt.Errorf("%w: %s", ErrCall, apperr.As(cerr).Message)
	}
	return out, nil
}
