package tools

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strings"

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
	// Auth is the kind of credentials it needs (AuthBearer: a token).
	Auth       string      `json:"auth"`
	BaseURL    string      `json:"base_url"`
	Operations []Operation `json:"operations"`
	spec       string
}

//go:embed connectors/*.yaml
var connectorFiles embed.FS

// catalog is the connectors bundled: name, title, description, auth.
var catalog = []Predefined{
	{Name: "github", Title: "GitHub", Description: "Repositories and issues of GitHub's REST API: read a repository, list, read and open issues.",
		Auth: AuthBearer, BaseURL: "https://api.github.com"},
	{Name: "slack", Title: "Slack", Description: "Slack's Web API: list channels, read a channel's messages, post a message.",
		Auth: AuthBearer, BaseURL: "https://slack.com/api"},
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
	spec, baseURL, auth := in.Spec, strings.TrimSpace(in.BaseURL), strings.ToLower(strings.TrimSpace(in.AuthType))
	if name := strings.TrimSpace(in.ConnectorName); name != "" {
		i := slices.IndexFunc(catalog, func(c Predefined) bool { return c.Name == name })
		if i < 0 {
			return Tool{}, apperr.Invalidf("connectorName", "must be a connector of the catalog (GET /v1/mcp/connectors)")
		}
		spec.V = catalog[i].spec
		if auth == "" {
			auth = catalog[i].Auth
		}
	} else if spec.V == nil {
		return Tool{}, apperr.Invalidf("openApiSpec", "is required: the OpenAPI document, as an object or as JSON or YAML text")
	}
	if auth == "" {
		auth = AuthNone
	}
	token := in.Credentials.Token
	if token == "" {
		token = in.Credentials.APIKey
	}
	a := &AuthInput{Type: auth, Token: token, Name: in.AuthName, Username: in.Credentials.Username, Password: in.Credentials.Password}
	t, err := s.Create(ctx, projectID, hosted, Input{Name: in.Name, Description: in.Description, Type: TypeOpenAPI,
		Config: ConfigInput{URL: baseURL, Spec: spec, Auth: a, Headers: in.Headers}})
	return t, renamed(err)
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
		"config.auth.password": "credentials.password"}
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
	return offers(t, nil), nil
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

// serverNotFound names a missing tool as the hosted server it was looked up as.
func serverNotFound(err error) error {
	if e := apperr.As(err); err != nil && e.Kind == apperr.NotFound && e.Code == Resource+"_not_found" {
		return apperr.NotFoundf("mcp_server")
	}
	return err
}
