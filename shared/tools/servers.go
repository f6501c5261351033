package tools

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Hosted MCP servers are a project's tools of no agent: the operations of an OpenAPI document
// (given, or of a predefined connector) that the API serves as an MCP server at /mcp/{id}, for
// any MCP client with a key of the project's account.

// hosted is the agent of a hosted server: none.
const hosted = ""

// Predefined is a connector of the catalog: a bundled OpenAPI document of a public API and what
// it needs to be used.
type Predefined struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// Auth is the kind of credentials it takes by default (AuthBearer: a token; AuthNone: none
	// unless authType says otherwise).
	Auth    string `json:"auth"`
	BaseURL string `json:"base_url"`
	// Needs lists what a create request must give besides name and connectorName.
	Needs      []string    `json:"needs"`
	Operations []Operation `json:"operations"`
	spec       string
}

//go:embed connectors/*.yaml
var connectorFiles embed.FS

// catalog is the connectors bundled: name, title, description, auth.
var catalog = []Predefined{
	{Name: "github", Title: "GitHub", Description: "Repositories and issues of GitHub's REST API: read a repository, list, read and open issues.",
		Auth: AuthBearer, BaseURL: "https://api.github.com", Needs: []string{"credentials.token"}},
	{Name: "slack", Title: "Slack", Description: "Slack's Web API: list channels, read a channel's messages, post a message.",
		Auth: AuthBearer, BaseURL: "https://slack.com/api", Needs: []string{"credentials.token"}},
	{Name: "rest", Title: "REST/JSON API", Description: "Any REST API that speaks JSON, under the base URL given: get, post, put, patch " +
		"and delete a path under it, with a query and a JSON body; authType and credentials as the API wants them.",
		Auth: AuthNone, Needs: []string{"baseUrl"}},
}

func init() {
	for i := range catalog {
		raw, err := connectorFiles.ReadFile("connectors/" + catalog[i].Name + ".yaml")
		if err != nil {
			panic(err)
		}
		catalog[i].spec = string(raw)
	}
}

// Connectors lists the catalog with each connector's operations.
func (s *Service) Connectors(ctx context.Context) ([]Predefined, error) {
	out := make([]Predefined, len(catalog))
	for i := range catalog {
		c, err := s.Connector(ctx, catalog[i].Name)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// Connector is the catalog's connector name, with its operations.
func (s *Service) Connector(ctx context.Context, name string) (Predefined, error) {
	i := slices.IndexFunc(catalog, func(c Predefined) bool { return c.Name == strings.TrimSpace(name) })
	if i < 0 {
		return Predefined{}, apperr.New(apperr.NotFound, "connector_not_found", fmt.Sprintf("There is no connector %q; GET /v1/mcp/connectors lists them.", name))
	}
	c := catalog[i]
	ops, _, err := s.connectors[TypeOpenAPI].List(ctx, Endpoint{Spec: c.spec})
	if err != nil {
		return Predefined{}, err
	}
	c.Operations = Tool{Operations: ops}.view().Operations
	return c, nil
}

// ServerInput is a hosted server as a create request gives it.
type ServerInput struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Spec is the OpenAPI document (from-openapi); ConnectorName a connector of the catalog
	// (from-predefined).
	Spec          freeform.Value `json:"openApiSpec"`
	ConnectorName string         `json:"connectorName"`
	// Collection is a Postman collection (v2.0 or v2.1), as an object or its JSON text
	// (from-postman).
	Collection freeform.Value `json:"postmanCollection"`
	// BaseURL overrides the document's servers.
	BaseURL string `json:"baseUrl"`
	// AuthType is none, bearer, header, query or basic; AuthName the header or query parameter
	// of a header or query token.
	AuthType    string            `json:"authType"`
	AuthName    string            `json:"authName"`
	Credentials Credentials       `json:"credentials"`
	Headers     map[string]string `json:"headers"`
}

// Credentials are a hosted server's secrets: a token, or a username and password.
type Credentials struct {
	Token    string `json:"token"`
	APIKey   string `json:"api_key"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// CreateServer adds a hosted server to the project, from an OpenAPI document or a predefined
// connector.
func (s *Service) CreateServer(ctx context.Context, projectID string, in ServerInput) (Tool, error) {
	input, err := in.input(false)
	if err != nil {
		return Tool{}, err
	}
	t, err := s.Create(ctx, projectID, hosted, input)
	return t, renamed(err)
}

// UpdateServer changes a hosted server: the fields given replace the stored ones (credentials
// left out are kept while the auth type stays), and its document is read again.
func (s *Service) UpdateServer(ctx context.Context, projectID, id string, in ServerInput) (Tool, error) {
	input, err := in.input(true)
	if err != nil {
		return Tool{}, err
	}
	t, err := s.Update(ctx, projectID, hosted, id, input)
	return t, serverNotFound(renamed(err))
}

// input is in as a tool's input. For an update (keep), what in leaves out is left out: the
// stored value stays.
func (in ServerInput) input(keep bool) (Input, error) {
	spec, auth := in.Spec, strings.ToLower(strings.TrimSpace(in.AuthType))
	if name := strings.TrimSpace(in.ConnectorName); name != "" {
		i := slices.IndexFunc(catalog, func(c Predefined) bool { return c.Name == name })
		if i < 0 {
			return Input{}, apperr.Invalidf("connectorName", "must be a connector of the catalog (GET /v1/mcp/connectors)")
		}
		spec.V = catalog[i].spec
		if auth == "" {
			auth = catalog[i].Auth
		}
		if catalog[i].BaseURL == "" && strings.TrimSpace(in.BaseURL) == "" && !keep {
			return Input{}, apperr.Invalidf("baseUrl", "is required by the %s connector: the API's base URL, such as https://api.example.com/v1", name)
		}
	} else if in.Collection.V != nil {
		text, err := postmanSpec(in.Collection)
		if err != nil {
			return Input{}, err
		}
		spec.V = text
	} else if spec.V == nil && !keep {
		return Input{}, apperr.Invalidf("openApiSpec", "is required: the OpenAPI document, as an object or as JSON or YAML text")
	}
	c := in.Credentials
	if c.Token == "" {
		c.Token = c.APIKey
	}
	var a *AuthInput
	if auth != "" || !keep {
		a = &AuthInput{Type: cmp(auth, AuthNone), Token: c.Token, Name: in.AuthName, Username: c.Username, Password: c.Password}
	}
	return Input{Name: in.Name, Description: in.Description, Type: TypeOpenAPI,
		Config: ConfigInput{URL: strings.TrimSpace(in.BaseURL), Spec: spec, Auth: a, Headers: in.Headers}}, nil
}

// CloneServer copies a hosted server, credentials, settings and all, under a new name.
func (s *Service) CloneServer(ctx context.Context, projectID, id, name string) (Tool, error) {
	t, err := s.repo.Get(ctx, projectID, hosted, strings.TrimSpace(id))
	if err != nil {
		return Tool{}, serverNotFound(err)
	}
	creds, err := s.open(t)
	if err != nil {
		return Tool{}, err
	}
	in := Input{Name: name, Description: t.Description, Type: t.Type, Config: ConfigInput{URL: t.Config.URL, SpecURL: t.Config.SpecURL,
		Headers: creds.Headers, Auth: &AuthInput{Type: t.Config.Auth.Type, Name: t.Config.Auth.Name, Username: t.Config.Auth.Username,
			Token: creds.Secret, Password: creds.Secret}}}
	if in.Config.SpecURL == "" {
		in.Config.Spec.V = t.Spec
	}
	clone, err := s.Create(ctx, projectID, hosted, in)
	if err != nil {
		return Tool{}, renamed(err)
	}
	clone, err = s.repo.Set(ctx, projectID, hosted, clone.ID, map[string]any{"settings": t.Settings, "disabled": t.Disabled})
	return clone.view(), err
}

// Usage is what a hosted server (or a tool) was used for over its last days.
type Usage struct {
	Days       int              `json:"days"`
	Calls      int              `json:"calls"`
	Errors     int              `json:"errors"`
	Operations []OperationUsage `json:"operations"`
	ByDay      []DayUsage       `json:"by_day"`
}

// OperationUsage is one operation's calls: how many, how many failed, how long they took.
type OperationUsage struct {
	Operation string `json:"operation"`
	Calls     int    `json:"calls"`
	Errors    int    `json:"errors"`
	AvgMS     int64  `json:"avg_ms"`
	P95MS     int64  `json:"p95_ms"`
}

// DayUsage is one day's calls (UTC).
type DayUsage struct {
	Day    string `json:"day"`
	Calls  int    `json:"calls"`
	Errors int    `json:"errors"`
}

// Usage limits.
const (
	DefaultUsageDays = 7
	MaxUsageDays     = 90
	// maxUsageCalls bounds the calls a usage read adds up.
	maxUsageCalls = 100000
)

// ServerUsage adds up the calls made to a hosted server (through its MCP endpoint, or by
// agents' tools that name it) over its last days.
func (s *Service) ServerUsage(ctx context.Context, projectID, id string, days int) (Usage, error) {
	if days == 0 {
		days = DefaultUsageDays
	}
	if days < 1 || days > MaxUsageDays {
		return Usage{}, apperr.Invalidf("days", "must be from 1 to %d", MaxUsageDays)
	}
	t, err := s.repo.Get(ctx, projectID, hosted, strings.TrimSpace(id))
	if err != nil {
		return Usage{}, serverNotFound(err)
	}
	since := s.now().AddDate(0, 0, -days)
	calls, err := s.repo.Calls(ctx, projectID, t.ID, since, maxUsageCalls)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Days: days, Operations: []OperationUsage{}, ByDay: []DayUsage{}}
	durations := map[string][]int64{}
	byOp, byDay := map[string]*OperationUsage{}, map[string]*DayUsage{}
	for _, c := range calls {
		failed := c.Outcome != OutcomeOK
		op, ok := byOp[c.Operation]
		if !ok {
			op = &OperationUsage{Operation: c.Operation}
			byOp[c.Operation] = op
		}
		day := c.At.UTC().Format(time.DateOnly)
		d, ok := byDay[day]
		if !ok {
			d = &DayUsage{Day: day}
			byDay[day] = d
		}
		u.Calls, op.Calls, d.Calls = u.Calls+1, op.Calls+1, d.Calls+1
		if failed {
			u.Errors, op.Errors, d.Errors = u.Errors+1, op.Errors+1, d.Errors+1
		}
		durations[c.Operation] = append(durations[c.Operation], c.DurationMS)
	}
	for _, name := range slices.Sorted(maps.Keys(byOp)) {
		op, ds := byOp[name], durations[name]
		slices.Sort(ds)
		var sum int64
		for _, v := range ds {
			sum += v
		}
		op.AvgMS, op.P95MS = sum/int64(len(ds)), ds[len(ds)*95/100]
		u.Operations = append(u.Operations, *op)
	}
	for _, day := range slices.Sorted(maps.Keys(byDay)) {
		u.ByDay = append(u.ByDay, *byDay[day])
	}
	return u, nil
}

// renamed is err with the fields of a tool's config named as a hosted server's request names
// them.
func renamed(err error) error {
	e := apperr.As(err)
	if err == nil || e.Kind != apperr.Invalid {
		return err
	}
	names := map[string]string{"config.spec": "openApiSpec", "config.url": "baseUrl", "config.auth.type": "authType",
		"config.auth.name": "authName", "config.auth.token": "credentials.token", "config.auth.username": "credentials.username",
		"config.auth.password": "credentials.password", "config.headers": "headers"}
	out := *e
	out.Details = slices.Clone(e.Details)
	for i, d := range out.Details {
		if n, ok := names[d.Field]; ok {
			out.Details[i].Field = n
		}
	}
	if len(out.Details) > 0 {
		out.Message = out.Details[0].Field + ": " + out.Details[0].Problem
	}
	return &out
}

// Server returns a hosted server of the project.
func (s *Service) Server(ctx context.Context, projectID, id string) (Tool, error) {
	t, err := s.Get(ctx, projectID, hosted, id)
	return t, serverNotFound(err)
}

// Servers lists a page of the project's hosted servers.
func (s *Service) Servers(ctx context.Context, projectID string, page paging.Page) ([]Tool, int, error) {
	return s.List(ctx, projectID, hosted, "", page)
}

// DeleteServer removes a hosted server of the project.
func (s *Service) DeleteServer(ctx context.Context, projectID, id string) error {
	return serverNotFound(s.Delete(ctx, projectID, hosted, id))
}

// ServerProject returns the project of the hosted server id, whichever it is: for requests that
// name the server alone, whose caller must still check the project is one it may use.
func (s *Service) ServerProject(ctx context.Context, id string) (string, error) {
	projectID, botID, err := s.repo.Locate(ctx, strings.TrimSpace(id))
	if err == nil && botID != hosted {
		err = apperr.NotFoundf(Resource)
	}
	return projectID, serverNotFound(err)
}

// ServerOffers are the operations a hosted server serves.
func (s *Service) ServerOffers(ctx context.Context, projectID, id string) ([]Offer, error) {
	t, err := s.repo.Get(ctx, projectID, hosted, id)
	if err != nil {
		return nil, serverNotFound(err)
	}
	return offers(t, nil, s.log), nil
}

// InvokeServer calls an operation of a hosted server for an MCP client.
func (s *Service) InvokeServer(ctx context.Context, projectID string, o Offer, args []byte) (Output, error) {
	return s.Invoke(ctx, projectID, hosted, o, "mcp", args)
}

// ValidateSpec reads an OpenAPI document as a hosted server would: its operations, or its
// problems (an Invalid error).
func (s *Service) ValidateSpec(ctx context.Context, spec freeform.Value) ([]Operation, error) {
	var p apperr.Problems
	text, _ := specOf(ConfigInput{Spec: spec}, &p)
	if err := p.Err(); err != nil {
		return nil, renamed(err)
	}
	ops, _, err := s.connectors[TypeOpenAPI].List(ctx, Endpoint{Spec: text})
	if err != nil {
		return nil, renamed(err)
	}
	return Tool{Operations: ops}.view().Operations, nil
}

// ValidatePostman reads a Postman collection as a hosted server would: its operations, or its
// problems (an Invalid error).
func (s *Service) ValidatePostman(ctx context.Context, collection freeform.Value) ([]Operation, error) {
	text, err := postmanSpec(collection)
	if err != nil {
		return nil, err
	}
	ops, _, err := s.connectors[TypeOpenAPI].List(ctx, Endpoint{Spec: text})
	if err != nil {
		return nil, renamed(err)
	}
	return Tool{Operations: ops}.view().Operations, nil
}

// postmanSpec is the OpenAPI document of a collection given as an object or as its JSON text.
func postmanSpec(collection freeform.Value) (string, error) {
	const field = "postmanCollection"
	var raw []byte
	switch v := collection.V.(type) {
	case nil:
		return "", apperr.Invalidf(field, "is required: the Postman collection (v2.0 or v2.1), as an object or its JSON text")
	case string:
		raw = []byte(v)
	default:
		raw, _ = json.Marshal(v)
	}
	if len(raw) > MaxSpecBytes {
		return "", apperr.Invalidf(field, "must be at most %d bytes", MaxSpecBytes)
	}
	return FromPostman(raw, field)
}

// serverNotFound names a missing tool as the hosted server it was looked up as.
func serverNotFound(err error) error {
	if e := apperr.As(err); err != nil && e.Kind == apperr.NotFound && e.Code == Resource+"_not_found" {
		return apperr.NotFoundf("mcp_server")
	}
	return err
}
