// Package tools is an agent's own tools: the MCP servers, OpenAPI services and remote A2A agents
// of its users' systems that agent runs may call, beside the platform's built-in tools. A tool is
// configured per agent, with credentials sealed at rest; its operations are read from the
// server (refresh) and offered to the model under the tool's name, each call recorded.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Resource names tools in errors.
const Resource = "tool"

// Types of tool.
const (
	TypeMCP     = "mcp"
	TypeOpenAPI = "openapi"
	TypeHTTP    = "http"
	// TypeA2A is a remote agent speaking A2A, read from its agent card (Config.URL).
	TypeA2A = "a2a"
)

// Transports of an MCP server.
const (
	TransportStreamable = "streamable"
	TransportSSE        = "sse"
)

// Approval policies of an operation: Auto asks before an operation that may change data (one
// the server does not mark read-only), unless the agent auto-approves its tools.
const (
	ApprovalAuto   = "auto"
	ApprovalAlways = "always"
	ApprovalNever  = "never"
)

// Auth types of a tool's credentials.
const (
	AuthNone   = "none"
	AuthBearer = "bearer"
	AuthHeader = "header"
	AuthQuery  = "query"
	AuthBasic  = "basic"
)

// Statuses of a tool: Ready once its operations were read, Error when the last refresh failed
// (LastError says why; the operations read before stay offered).
const (
	StatusNew   = "new"
	StatusReady = "ready"
	StatusError = "error"
)

// Limits.
const (
	MaxPerAgent    = 20
	MaxNameLength  = 40
	MaxDescription = 2000
	MaxHeaders     = 20
	MaxOperations  = 100
	DefaultTimeout = 30
	// DefaultA2ATimeout bounds a call of a remote agent, which answers after its own run.
	DefaultA2ATimeout  = 60
	MaxTimeout         = 120
	DefaultResultBytes = 20000
	MinResultBytes     = 1000
	MaxResultBytes     = 200000
	// MaxSpecBytes bounds an OpenAPI document, given or fetched.
	MaxSpecBytes = 1 << 20
)

// Tool is an agent's tool.
type Tool struct {
	ID          string `json:"id" bson:"_id"`
	ProjectID   string `json:"-" bson:"project_id"`
	BotID       string `json:"bot_id" bson:"bot_id"`
	Name        string `json:"name" bson:"name"`
	Key         string `json:"-" bson:"key"`
	Description string `json:"description" bson:"description"`
	Type        string `json:"type" bson:"type"`
	Config      Config `json:"config" bson:"config"`
	Sealed      string `json:"-" bson:"sealed"`
	// Revision names the tool's configuration as it is: each write of it (not a refresh of its
	// operations) gives a new one, and keeps the tool's form under it for its agent's versions.
	Revision string `json:"-" bson:"revision"`
	// Spec is an OpenAPI tool's document as given or as last fetched from Config.SpecURL.
	Spec       string      `json:"-" bson:"spec"`
	Settings   Settings    `json:"settings" bson:"settings"`
	Operations []Operation `json:"operations" bson:"operations"`
	// Disabled are the operations toggled off.
	Disabled    []string   `json:"-" bson:"disabled"`
	Status      string     `json:"status" bson:"status"`
	LastError   string     `json:"last_error" bson:"last_error"`
	RefreshedAt *time.Time `json:"refreshed_at" bson:"refreshed_at"`
	CreatedAt   time.Time  `json:"created_at" bson:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at" bson:"updated_at"`
}

// Config is where a tool's server is and how it is authenticated, without the credentials:
// a read shows which are set, never their values.
type Config struct {
	// URL is an MCP server's endpoint, or the base URL an OpenAPI tool's calls go to (its
	// document's first server when empty).
	URL string `json:"url" bson:"url"`
	// Transport is an MCP server's.
	Transport string `json:"transport" bson:"transport"`
	// SpecURL is where an OpenAPI tool's document is read from (empty when it was given).
	SpecURL string `json:"spec_url" bson:"spec_url"`
	// Method and InputSchema are an http tool's.
	Method      string          `json:"method,omitempty" bson:"method,omitempty"`
	InputSchema freeform.Object `json:"input_schema,omitempty" bson:"input_schema,omitempty"`
	// MCPServerID names the hosted MCP server of the project an agent's tool calls.
	MCPServerID string `json:"mcp_server_id,omitempty" bson:"mcp_server_id,omitempty"`
	Auth        Auth   `json:"auth" bson:"auth"`
	// Headers are the names of the headers sent with every request (their values are sealed).
	Headers []string `json:"headers" bson:"headers"`
}

// Auth is how a tool authenticates, without its secret.
type Auth struct {
	Type string `json:"type" bson:"type"`
	// Name is the header (AuthHeader) or query parameter (AuthQuery) that carries the token.
	Name     string `json:"name,omitempty" bson:"name"`
	Username string `json:"username,omitempty" bson:"username"`
	// Set says the secret (token or password) is stored.
	Set bool `json:"set" bson:"set"`
}

// Settings are how an agent uses a tool.
type Settings struct {
	// Approval is the policy of operations Operations does not name.
	Approval string `json:"approval" bson:"approval"`
	// Operations maps operation names to their approval policy.
	Operations freeform.Object `json:"operations" bson:"operations"`
	// TimeoutSeconds bounds one call (connecting included).
	TimeoutSeconds int `json:"timeout_seconds" bson:"timeout_seconds"`
	// MaxResultBytes is the most of a call's answer the model is shown.
	MaxResultBytes int `json:"max_result_bytes" bson:"max_result_bytes"`
	// AllowedOperations, when not empty, are the only operations offered.
	AllowedOperations []string `json:"allowed_operations" bson:"allowed_operations"`
}

// Operation is one operation a tool's server offers (an MCP tool).
type Operation struct {
	Name        string          `json:"name" bson:"name"`
	Description string          `json:"description" bson:"description"`
	InputSchema freeform.Object `json:"input_schema" bson:"input_schema"`
	// ReadOnly is the server's word that the operation changes nothing (for OpenAPI, a GET or
	// HEAD).
	ReadOnly bool `json:"read_only" bson:"read_only"`
	// Binding is how an OpenAPI operation is called.
	Binding *Binding `json:"-" bson:"binding,omitempty"`
	// Active and Approval are what the agent's settings make of it (not stored).
	Active   bool   `json:"active" bson:"-"`
	Approval string `json:"approval" bson:"-"`
}

// Binding is how an HTTP operation is called: its method and path (with {parameters}), the
// server its document names, and where each argument goes.
type Binding struct {
	Method string  `bson:"method"`
	Path   string  `bson:"path"`
	Server string  `bson:"server"`
	Params []Param `bson:"params"`
	// Body says the arguments' "body" is sent as the JSON request body.
	Body bool `bson:"body"`
	// Streaming says a remote A2A agent (whose JSON-RPC endpoint is Server) streams its tasks,
	// as its card said when it was read.
	Streaming bool `bson:"streaming,omitempty"`
	// Protocol is the A2A protocol version a remote A2A agent is spoken to in at Server ("1.0"
	// or "0.3"; none, for a tool read before it was kept, is 0.3).
	Protocol string `bson:"protocol,omitempty"`
}

// Param is a parameter of an HTTP operation: in path, query or header.
type Param struct {
	Name string `bson:"name"`
	In   string `bson:"in"`
	// Reserved says a path parameter's slashes are kept (the document's x-allow-reserved): it
	// names a path of several segments, not one.
	Reserved bool `bson:"reserved,omitempty"`
}

// Input is a tool as a create or update request gives it.
type Input struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Type        string      `json:"type"`
	Config      ConfigInput `json:"config"`
}

// ConfigInput is a tool's config as a request gives it, credentials included.
type ConfigInput struct {
	URL       string            `json:"url"`
	Transport string            `json:"transport"`
	Headers   map[string]string `json:"headers"`
	Auth      *AuthInput        `json:"auth"`
	// MCPServerID names a hosted MCP server of the project.
	MCPServerID string `json:"mcp_server_id"`
	// Method and InputSchema are an http tool's: its endpoint (URL) is called with this method
	// (POST by default), its arguments as described.
	Method      string          `json:"method"`
	InputSchema freeform.Object `json:"input_schema"`
	// Spec is an OpenAPI tool's document (3.0 or 3.1), as JSON or YAML text or as an object;
	// SpecURL is where to read it instead.
	Spec    freeform.Value `json:"spec"`
	SpecURL string         `json:"spec_url"`
}

// AuthInput is a tool's authentication as a request gives it.
type AuthInput struct {
	Type     string `json:"type"`
	Token    string `json:"token"`
	Name     string `json:"name"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// SettingsInput is a configure request: the fields given replace the stored ones.
type SettingsInput struct {
	Approval          *string         `json:"approval"`
	Operations        freeform.Object `json:"operations"`
	TimeoutSeconds    *int            `json:"timeout_seconds"`
	MaxResultBytes    *int            `json:"max_result_bytes"`
	AllowedOperations *[]string       `json:"allowed_operations"`
}

// credentials are a tool's secrets, sealed together.
type credentials struct {
	Headers map[string]string `json:"headers,omitempty"`
	Secret  string            `json:"secret,omitempty"`
}

// Endpoint is a tool's server as a connector reaches it: credentials in the clear, so it never
// leaves this package but to the connector.
type Endpoint struct {
	URL       string
	Transport string
	Headers   map[string]string
	// Query are parameters every request carries (a token sent in the query).
	Query    url.Values
	Timeout  time.Duration
	MaxBytes int
	// Spec and SpecURL are an OpenAPI tool's document, or where to read it.
	Spec    string
	SpecURL string
}

// Output is what an operation answered, as text for the model.
type Output struct {
	Text string
	// IsError is the operation's own report of a failure (the call itself went through).
	IsError bool
	// Truncated says Text was cut to the size limit; Bytes is the size of the whole answer.
	Truncated bool
	Bytes     int
}

// OutputOf is an operation's answer text as the model is shown it: cut to max bytes (at a
// character boundary) with a note saying how much there was.
func OutputOf(text string, isError bool, max int) Output {
	out := Output{Text: text, IsError: isError, Bytes: len(text)}
	if max > 0 && len(text) > max {
		cut := strings.ToValidUTF8(text[:max], "")
		out.Text = fmt.Sprintf("%s\n[truncated: the tool answered %d bytes; the first %d are shown]", cut, len(text), len(cut))
		out.Truncated = true
	}
	return out
}

// Connector talks to a type of tool's servers (MCP, OpenAPI, A2A): lists their operations and calls
// them. Its errors are apperr BadGateway (unreachable, not speaking the protocol),
// GatewayTimeout or Invalid (a config or document it cannot use, with the problems). List may
// return the document it read (an OpenAPI tool's, fetched from its SpecURL).
type Connector interface {
	List(ctx context.Context, e Endpoint) ([]Operation, string, error)
	Call(ctx context.Context, e Endpoint, op Operation, args json.RawMessage) (Output, error)
}

// Call is the record of one call an agent run made.
type Call struct {
	ID        string `json:"id" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"bot_id" bson:"bot_id"`
	ToolID    string `json:"tool_id" bson:"tool_id"`
	// ServerID is the hosted server the tool called, when it names one.
	ServerID    string    `json:"server_id,omitempty" bson:"server_id,omitempty"`
	Operation   string    `json:"operation" bson:"operation"`
	ExecutionID string    `json:"execution_id" bson:"execution_id"`
	DurationMS  int64     `json:"duration_ms" bson:"duration_ms"`
	Outcome     string    `json:"outcome" bson:"outcome"`
	Bytes       int       `json:"bytes" bson:"bytes"`
	At          time.Time `json:"at" bson:"at"`
}

// Outcomes of a call.
const (
	OutcomeOK        = "ok"
	OutcomeToolError = "tool_error"
	OutcomeFailed    = "failed"
	// OutcomeRefused is a call whose arguments broke its operation's schema: not made.
	OutcomeRefused = "refused"
)

// Repo persists tools. Lookups take the project and agent; a tool of another is not found.
type Repo interface {
	// Insert stores t: a Conflict tool_exists when the agent has a tool of its key.
	Insert(ctx context.Context, t Tool) error
	Get(ctx context.Context, projectID, botID, id string) (Tool, error)
	List(ctx context.Context, projectID, botID, typ string, page paging.Page) ([]Tool, int, error)
	// All returns the agent's tools, at most MaxPerAgent.
	All(ctx context.Context, projectID, botID string) ([]Tool, error)
	Count(ctx context.Context, projectID, botID string) (int, error)
	// Set sets fields (by their stored names) of the tool and returns it as it is then.
	Set(ctx context.Context, projectID, botID, id string, fields map[string]any) (Tool, error)
	Delete(ctx context.Context, projectID, botID, id string) error
	// Restore writes t whole as the tool of its id, making it again when it was deleted.
	Restore(ctx context.Context, t Tool) error
	// KeepRevisions keeps each tool's form under its revision; one kept already is left.
	KeepRevisions(ctx context.Context, ts ...Tool) error
	// Revision returns the form of the agent's tool the revision names: NotFound when none.
	Revision(ctx context.Context, projectID, botID, revision string) (Tool, error)
	// Locate returns the project and agent of the tool id ("" for a hosted server), whichever
	// they are.
	Locate(ctx context.Context, id string) (projectID, botID string, err error)
	RecordCall(ctx context.Context, c Call) error
	// Calls returns the calls made with the tool, or to it as a hosted server, since the time
	// given, at most limit of them, oldest first.
	Calls(ctx context.Context, projectID, id string, since time.Time, limit int) ([]Call, error)
}

var keyUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// keyOf is a tool's name as the prefix of the names the model calls its operations by: lower
// case letters and digits, words joined by single dashes.
func keyOf(name string) string {
	return strings.Trim(keyUnsafe.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

var nameUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// CallName is the name the model calls operation of the tool keyed key by: key, two
// underscores, the operation, within the 64 characters model providers accept.
func CallName(key, operation string) string {
	name := key + "__" + nameUnsafe.ReplaceAllString(operation, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}
