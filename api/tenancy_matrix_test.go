package api_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/channels/telegram/telegramtest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/email"
)

// The tenancy matrix: every route under /v1 (but the admin ones and the OpenAPI document) and
// under /a2a is
// called with another account's key, with another account's project, with another project's
// agent and with another project's resource, and must answer exactly as it does for ids that do
// not exist (404; 200 for ids that only filter a list, 422 for the pipeline of a new deal), with
// nothing of the other tenant in the body, leaving both tenants' data as it was; then the same
// request with the owner's own ids must answer 200.

// matrixFixture is what one request of the matrix names: the caller's key, a project and an
// agent, and the agent's resources. A variation mixes two tenants' fixtures.
type matrixFixture struct {
	key, project, bot                                                         string
	keyID, source, chat, message, deal, contact, contactName, pipeline, stage string
	// defaultPipeline is the project's default pipeline, where a new deal goes.
	defaultPipeline, workflow, run, execution, pausedChat, tool, server, heartbeat string
	// channel is a channel connection of the agent.
	channel string
	// email is an email the agent received.
	email string
	// field is a custom field of the project's contacts.
	field string
	// task is a CRM task of the agent, linked to its deal and contact.
	task string
	// memory is a memory the agent keeps of its end user memoryUser.
	memory, memoryUser string
	// operator is an operator of the project, and operatorToken its token.
	operator, operatorToken string
	// workspace is a workspace of the agent; file is one of its files, at filePath, changed once;
	// trashed a file of it deleted (in its trash).
	workspace, file, filePath, trashed string
	// dataset is an eval dataset of the agent; evalRun a finished run of it.
	dataset, evalRun string
	// a2aKey is an A2A key of the agent.
	a2aKey string
}

// naming returns f naming o's resources (everything but the key, the project and the agent).
func (f matrixFixture) naming(o matrixFixture) matrixFixture {
	o.key, o.project, o.bot = f.key, f.project, f.bot
	return o
}

// missingFixture names nothing that exists.
func missingFixture(key string) matrixFixture {
	return matrixFixture{key: key, project: "no-such-project", bot: "no-such-bot", keyID: "no-such-key",
		source: "no-such-source", chat: "no-such-chat", message: "no-such-message", deal: "no-such-deal",
		contact: "no-such-contact", contactName: "no-such-contact-name", pipeline: "no-such-pipeline", stage: "no-such-stage", defaultPipeline: "no-such-default-pipeline",
		workflow: "no-such-workflow", run: "no-such-run", execution: "no-such-execution", pausedChat: "no-such-paused-chat", tool: "no-such-tool", server: "no-such-server",
		heartbeat: "no-such-heartbeat", channel: "no-such-channel", email: "no-such-email", field: "no-such-field", task: "no-such-task",
		memory: "no-such-memory", memoryUser: "no-such-user", operator: "no-such-operator",
		workspace: "no-such-workspace", file: "no-such-file", filePath: "no-such-file.html", trashed: "no-such-deleted-file", dataset: "no-such-dataset", evalRun: "no-such-eval-run",
		a2aKey: "no-such-a2a-key"}
}

// statsWindow is a fixed window for the statistics' rows, so that reading them twice answers
// the same.
func statsWindow(matrixFixture) string {
	return qs("from", "2026-01-01T00:00:00Z", "to", "2036-01-01T00:00:00Z")
}

// reportStart and reportEnd are a fixed window around the test for the CRM report's row (at most
// 366 days long), so that reading it twice answers the same.
var (
	reportStart = time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
	reportEnd   = time.Now().UTC().Add(24 * time.Hour).Format(time.RFC3339)
)

func reportWindow(matrixFixture) string { return qs("from", reportStart, "to", reportEnd) }

// matrixScope is what a route names besides the caller's account.
type matrixScope int

const (
	// accountScope routes name nothing but the caller's account.
	accountScope matrixScope = iota
	// keyScope routes name one of the account's keys.
	keyScope
	// projectScope routes name a project, in the path, the query or the body.
	projectScope
	// botScope routes name a project and one of its agents, in the query or the body.
	botScope
	// operatorScope routes name one of the account's operators.
	operatorScope
	// agentScope routes name one of the account's agents in the path, and no project (the
	// agent's own is taken): the A2A door's.
	agentScope
)

// where is where a request carries its project and agent.
type where int

const (
	inPath where = iota
	inQuery
	inBody
	// inHeader is the OpenAI door's: the project in the OpenAI-Project header, the agent as the
	// model (agent:<id>) in the body, or in the path for :model.
	inHeader
)

// matrixRow is one request of the matrix: a route and how to call it with a fixture.
type matrixRow struct {
	method, path string
	// name tells apart rows of one route.
	name  string
	scope matrixScope
	in    where
	// query is more of the query string; body is the body (the project and agent are added when
	// in is inBody).
	query func(f matrixFixture) string
	body  func(f matrixFixture) map[string]any
	// raw is a body that is not JSON (a JSONL import), sent as contentType.
	raw         func(f matrixFixture) []byte
	contentType string
	// resource says the request names a resource of the agent besides the agent, so that naming
	// another project's one is a variation of its own.
	resource bool
	// foreign is the status another project's resource gets when it is not 404 (always the same
	// answer as a resource that does not exist): 200 for ids that only filter a list, 422 for a
	// reference a body's validation refuses.
	foreign int
	// last orders the owner's requests: those that remove fixtures, or need others first, run
	// after the rest, in increasing order.
	last int
	// noSnapshot leaves a GET out of the snapshots of the tenants' data (its answer changes with
	// time or does not end).
	noSnapshot bool
	// eventStream answers its owner with an event stream, which the OpenAPI checks of apitest
	// cannot decode: the owner's request is sent without them.
	eventStream bool
	// until is what the owner's event stream is read up to ("event: done" when empty: the
	// stream ends there); a stream that does not end is closed once it is read.
	until string
	// botCode is the code of an agent not found, when not bot_not_found.
	botCode string
	// asOperator sends the fixture's operator token instead of its key.
	asOperator bool
}

func (r matrixRow) label() string {
	l := r.method + " " + r.path
	if r.name != "" {
		l += " (" + r.name + ")"
	}
	return l
}

// request builds the row's request from f.
func (r matrixRow) request(f matrixFixture) apitest.Request {
	path := r.path
	for param, v := range map[string]string{":project_id": f.project, ":key_id": f.keyID, ":deal_id": f.deal,
		":pipeline_id": f.pipeline, ":stage_id": f.stage, ":contact_id": f.contact, ":field_id": f.field, ":task_id": f.task, ":tool_id": f.tool, ":id": f.server, ":name": "github"} {
		path = strings.ReplaceAll(path, param, url.PathEscape(v))
	}
	path = strings.ReplaceAll(path, ":memory_id", url.PathEscape(f.memory))
	path = strings.ReplaceAll(path, ":bot_id", url.PathEscape(f.bot))
	q := url.Values{}
	var body map[string]any
	if r.body != nil {
		body = r.body(f)
	}
	scope := map[string]string{}
	switch r.scope {
	case projectScope:
		scope["project_id"] = f.project
	case botScope:
		scope["project_id"], scope["bot_id"] = f.project, f.bot
	}
	if f.project == "" {
		delete(scope, "project_id")
	}
	header := map[string]string{}
	for k, v := range scope {
		switch {
		case r.in == inHeader && k == "project_id":
			header["OpenAI-Project"] = v
		case r.in == inHeader && strings.Contains(path, ":model"):
			path = strings.ReplaceAll(path, ":model", url.PathEscape("agent:"+v))
		case r.in == inHeader:
			if body == nil {
				body = map[string]any{}
			}
			body["model"] = "agent:" + v
		}
		switch r.in {
		case inQuery:
			q.Set(k, v)
		case inBody:
			if body == nil {
				body = map[string]any{}
			}
			body[k] = v
		}
	}
	raw := q.Encode()
	if r.query != nil {
		raw = strings.TrimPrefix(raw+"&"+r.query(f), "&")
	}
	if raw != "" {
		path += "?" + raw
	}
	req := apitest.Request{Method: r.method, Path: path, Key: f.key, Header: header}
	if r.asOperator {
		req.Key = f.operatorToken
	}
	if body != nil {
		req.Body = body
	}
	if r.raw != nil {
		req.Raw, req.ContentType = r.raw(f), r.contentType
	}
	return req
}

// qs is a query string of name=value pairs.
func qs(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

// tenancyMatrix is the table: one row (or more) for every route under /v1, and the A2A door's.
func tenancyMatrix(hookURL, mcpURL, telegramURL string) []matrixRow {
	const filters, refused = http.StatusOK, http.StatusUnprocessableEntity
	q := func(kv func(f matrixFixture) []string) func(f matrixFixture) string {
		return func(f matrixFixture) string { return qs(kv(f)...) }
	}
	return []matrixRow{
		{method: "POST", path: "/v1/projects", scope: accountScope, body: func(matrixFixture) map[string]any { return map[string]any{"name": "matrix"} }},
		{method: "GET", path: "/v1/projects", scope: accountScope},
		{method: "GET", path: "/v1/projects/:project_id", scope: projectScope, in: inPath},
		{method: "GET", path: "/v1/projects/:project_id/signing-secret", scope: projectScope, in: inPath},
		{method: "POST", path: "/v1/keys", scope: accountScope, body: func(matrixFixture) map[string]any { return map[string]any{"name": "matrix"} }},
		{method: "GET", path: "/v1/keys", scope: accountScope},
		{method: "DELETE", path: "/v1/keys/:key_id", scope: keyScope},

		{method: "POST", path: "/v1/bot/create", scope: projectScope, in: inBody,
			body: func(matrixFixture) map[string]any { return map[string]any{"name": "Another", "model": "gpt-4o-mini"} }},
		{method: "GET", path: "/v1/bot/read", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/readall", scope: projectScope, in: inQuery},
		{method: "PUT", path: "/v1/bot/update", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"instruction": "Be brief.", "domain": "matrix.shop.test"}
			}},
		{method: "DELETE", path: "/v1/bot/delete", scope: botScope, in: inQuery, last: 9},
		{method: "POST", path: "/v1/bot/reset", scope: botScope, in: inBody, last: 3},
		{method: "POST", path: "/v1/bot/domain/verify", scope: botScope, in: inBody, last: 1},
		{method: "GET", path: "/v1/bot/version/readall", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/version/read", scope: botScope, in: inQuery, query: q(func(matrixFixture) []string { return []string{"version", "1"} })},
		{method: "GET", path: "/v1/bot/version/diff", scope: botScope, in: inQuery,
			query: q(func(matrixFixture) []string { return []string{"from", "1", "to", "2"} })},
		{method: "POST", path: "/v1/bot/version/publish", scope: botScope, in: inBody},
		// After the tool's deletion: a rollback to version 1 deletes the tools made since.
		{method: "POST", path: "/v1/bot/version/rollback", scope: botScope, in: inBody, last: 3,
			body: func(matrixFixture) map[string]any { return map[string]any{"version": 1} }},
		{method: "POST", path: "/v1/bot/eval/dataset/create", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"name": "Matrix set", "cases": []any{map[string]any{"input": "Hi?", "expected_answer": "Hello"}}}
			}},
		{method: "POST", path: "/v1/bot/eval/dataset/import", scope: botScope, in: inQuery, contentType: "application/x-ndjson",
			query: q(func(matrixFixture) []string { return []string{"name", "Matrix import"} }),
			raw:   func(matrixFixture) []byte { return []byte(`{"input":"Hi?","expected_facts":["hello"]}` + "\n") }},
		{method: "POST", path: "/v1/bot/eval/dataset/from-chats", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"name": "From chats", "chat_ids": []any{f.chat}}
			}},
		{method: "GET", path: "/v1/bot/eval/dataset/readall", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/eval/dataset/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"dataset_id", f.dataset} })},
		{method: "DELETE", path: "/v1/bot/eval/dataset/delete", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"dataset_id", f.dataset} })},
		{method: "POST", path: "/v1/bot/eval/run/create", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any { return map[string]any{"dataset_id": f.dataset} }},
		{method: "GET", path: "/v1/bot/eval/run/readall", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/eval/run/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"run_id", f.evalRun} })},
		{method: "GET", path: "/v1/bot/eval/online", scope: botScope, in: inQuery},

		{method: "PUT", path: "/v1/bot/calendar/settings", scope: botScope, in: inQuery,
			body: func(matrixFixture) map[string]any { return map[string]any{"is_enabled": true} }},
		{method: "GET", path: "/v1/bot/calendar/settings", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/calendar/slots", scope: botScope, in: inQuery, noSnapshot: true},

		{method: "POST", path: "/v1/bot/crm/deals", scope: botScope, in: inBody, resource: true, foreign: refused,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"title": "Another deal", "pipeline_id": f.defaultPipeline}
			}},
		{method: "GET", path: "/v1/bot/crm/deals", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"pipeline_id", f.pipeline} })},
		{method: "GET", path: "/v1/bot/crm/deals/:deal_id", scope: botScope, in: inQuery, resource: true},
		{method: "PUT", path: "/v1/bot/crm/deals/:deal_id", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"value": 4321} }},
		{method: "DELETE", path: "/v1/bot/crm/deals/:deal_id", scope: botScope, in: inQuery, resource: true, last: 2},
		{method: "GET", path: "/v1/bot/crm/stages", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/crm/pipelines", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/crm/pipelines/board", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"pipeline_id", f.pipeline} })},
		{method: "POST", path: "/v1/bot/crm/pipelines", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return map[string]any{"name": "Another pipeline"} }},
		{method: "PUT", path: "/v1/bot/crm/pipelines/:pipeline_id", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"name": "Renamed pipeline"} }},
		{method: "DELETE", path: "/v1/bot/crm/pipelines/:pipeline_id", scope: botScope, in: inQuery, resource: true, last: 3},
		{method: "POST", path: "/v1/bot/crm/pipelines/stages", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"pipeline_id": f.pipeline, "name": "Another stage"}
			}},
		{method: "PUT", path: "/v1/bot/crm/pipelines/stages/:stage_id", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"probability": 40} }},
		{method: "DELETE", path: "/v1/bot/crm/pipelines/stages/:stage_id", scope: botScope, in: inQuery, resource: true, last: 2},
		{method: "GET", path: "/v1/bot/crm/contacts", scope: botScope, in: inQuery},
		{method: "POST", path: "/v1/bot/crm/contacts", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return map[string]any{"name": "Another contact"} }},
		{method: "GET", path: "/v1/bot/crm/contacts/search", scope: botScope, in: inQuery, resource: true, foreign: filters,
			query: q(func(f matrixFixture) []string { return []string{"query", f.contactName} })},
		{method: "GET", path: "/v1/bot/crm/contacts/:contact_id", scope: botScope, in: inQuery, resource: true},
		{method: "PUT", path: "/v1/bot/crm/contacts/:contact_id", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"company": "Another company"} }},
		{method: "POST", path: "/v1/bot/crm/contacts/:contact_id/notes", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"content": "Called back.", "type": "call"} }},
		{method: "GET", path: "/v1/bot/crm/contacts/:contact_id/notes", scope: botScope, in: inQuery, resource: true},
		{method: "DELETE", path: "/v1/bot/crm/contacts/:contact_id", scope: botScope, in: inQuery, resource: true, last: 2},
		{method: "GET", path: "/v1/bot/crm/contacts/statuses", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/crm/contacts/export", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/crm/fields", scope: botScope, in: inQuery},
		{method: "POST", path: "/v1/bot/crm/fields", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"label": "Another field", "field_type": "number"}
			}},
		{method: "PUT", path: "/v1/bot/crm/fields/:field_id", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"label": "Renamed field"} }},
		{method: "DELETE", path: "/v1/bot/crm/fields/:field_id", scope: botScope, in: inQuery, resource: true, last: 2},
		{method: "GET", path: "/v1/bot/crm/tasks", scope: botScope, in: inQuery},
		{method: "POST", path: "/v1/bot/crm/tasks", scope: botScope, in: inBody, resource: true, foreign: refused,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"title": "Another task", "deal_id": f.deal, "contact_id": f.contact}
			}},
		{method: "PUT", path: "/v1/bot/crm/tasks/:task_id", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any { return map[string]any{"priority": "high", "deal_id": f.deal} }},
		{method: "POST", path: "/v1/bot/crm/tasks/:task_id/snooze", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"until": "2031-01-01T09:00:00Z"} }},
		{method: "DELETE", path: "/v1/bot/crm/tasks/:task_id", scope: botScope, in: inQuery, resource: true, last: 2},
		{method: "GET", path: "/v1/bot/crm/setup", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/crm/templates", scope: botScope, in: inQuery},
		{method: "POST", path: "/v1/bot/crm/templates/apply", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return map[string]any{"template_key": "sales"} }},
		{method: "GET", path: "/v1/bot/crm/report", scope: botScope, in: inQuery, query: reportWindow},

		{method: "GET", path: "/v1/mcp/connectors", scope: accountScope},
		{method: "GET", path: "/v1/mcp/connectors/:name", scope: accountScope},
		{method: "POST", path: "/v1/mcp/validate-openapi", scope: accountScope,
			body: func(matrixFixture) map[string]any { return map[string]any{"openApiSpec": ordersSpec} }},
		{method: "GET", path: "/v1/mcp", scope: projectScope, in: inQuery},
		{method: "GET", path: "/v1/mcp/:id", scope: projectScope, in: inQuery, resource: true},
		{method: "POST", path: "/v1/mcp/create/from-openapi", scope: projectScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"name": "Another server", "openApiSpec": ordersSpec, "baseUrl": "https://orders.example.com"}
			}},
		{method: "POST", path: "/v1/mcp/validate-postman", scope: accountScope,
			body: func(matrixFixture) map[string]any { return map[string]any{"postmanCollection": ordersCollection} }},
		{method: "POST", path: "/v1/mcp/create/from-postman", scope: projectScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"name": "Another collection", "postmanCollection": ordersCollection, "baseUrl": "https://orders.example.com"}
			}},
		{method: "POST", path: "/v1/mcp/create/from-predefined", scope: projectScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"name": "Another GitHub", "connectorName": "github", "credentials": map[string]any{"token": "ghp-matrix"}}
			}},
		{method: "PUT", path: "/v1/mcp/:id/update", scope: projectScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"description": "Changed."} }},
		{method: "POST", path: "/v1/mcp/:id/clone", scope: projectScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"name": "A copy"} }},
		{method: "GET", path: "/v1/mcp/:id/usage", scope: projectScope, in: inQuery, resource: true},
		{method: "DELETE", path: "/v1/mcp/:id/delete", scope: projectScope, in: inQuery, resource: true, last: 2},

		{method: "GET", path: "/v1/bot/tool", scope: botScope, in: inQuery},
		{method: "POST", path: "/v1/bot/tool", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return shopTool("Another tool", mcpURL, "") }},
		{method: "GET", path: "/v1/bot/tool/:tool_id", scope: botScope, in: inQuery, resource: true},
		{method: "PUT", path: "/v1/bot/tool/:tool_id", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any { return map[string]any{"description": "Changed."} }},
		{method: "PUT", path: "/v1/bot/tool/:tool_id/configure", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"settings": map[string]any{"timeout_seconds": 10}}
			}},
		{method: "POST", path: "/v1/bot/tool/:tool_id/refresh", scope: botScope, in: inBody, resource: true},
		{method: "POST", path: "/v1/bot/tool/:tool_id/toggle", scope: botScope, in: inBody, resource: true,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"tool_name": "lookup_order", "active": false}
			}},
		{method: "POST", path: "/v1/bot/tool/:tool_id/test", scope: botScope, in: inBody, resource: true},
		{method: "DELETE", path: "/v1/bot/tool/:tool_id", scope: botScope, in: inQuery, resource: true, last: 2},

		{method: "POST", path: "/v1/bot/workflow/create", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return matrixWorkflow("Another workflow", hookURL) }},
		{method: "PUT", path: "/v1/bot/workflow/update", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workflow_id": f.workflow, "description": "changed"}
			}},
		{method: "GET", path: "/v1/bot/workflow/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"workflow_id", f.workflow} })},
		{method: "GET", path: "/v1/bot/workflow/readall", scope: botScope, in: inQuery},
		{method: "DELETE", path: "/v1/bot/workflow/delete", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"workflow_id", f.workflow} })},
		{method: "POST", path: "/v1/bot/workflow/run", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workflow_id": f.workflow, "input": map[string]any{"n": 1}}
			}},
		{method: "GET", path: "/v1/bot/workflow/runs", scope: botScope, in: inQuery, resource: true, foreign: filters,
			query: q(func(f matrixFixture) []string { return []string{"workflow_id", f.workflow} })},
		{method: "GET", path: "/v1/bot/workflow/run/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"run_id", f.run} })},
		{method: "GET", path: "/v1/bot/workflow/logs", scope: botScope, in: inQuery, resource: true, foreign: filters,
			query: q(func(f matrixFixture) []string { return []string{"workflow_id", f.workflow} })},
		{method: "GET", path: "/v1/bot/workflow/catalog", scope: botScope, in: inQuery},

		{method: "POST", path: "/v1/bot/heartbeat/configure", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"prompt": "Another check", "cron_pattern": "0 9 * * *"}
			}},
		{method: "POST", path: "/v1/bot/heartbeat/configure", name: "update", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"heartbeat_id": f.heartbeat, "prompt": "Changed check"}
			}},
		{method: "GET", path: "/v1/bot/heartbeat/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"heartbeat_id", f.heartbeat} })},
		{method: "GET", path: "/v1/bot/heartbeat/readall", scope: botScope, in: inQuery},
		{method: "POST", path: "/v1/bot/channel/create", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"type": "telegram", "name": "Matrix channel", "api_base_url": telegramURL,
					"credentials": map[string]any{"bot_token": "7:matrix-token"}}
			}},
		{method: "GET", path: "/v1/bot/channel/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"channel_id", f.channel} })},
		{method: "GET", path: "/v1/bot/channel/readall", scope: botScope, in: inQuery},
		{method: "PUT", path: "/v1/bot/channel/update", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"channel_id": f.channel, "name": "Renamed channel"}
			}},
		{method: "DELETE", path: "/v1/bot/channel/delete", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"channel_id", f.channel} })},
		{method: "GET", path: "/v1/bot/email/address", scope: botScope, in: inQuery},
		{method: "PUT", path: "/v1/bot/email/settings", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return map[string]any{"signature": "The matrix team"} }},
		{method: "POST", path: "/v1/bot/email/settings", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return map[string]any{"signature": "The matrix team"} }},
		{method: "GET", path: "/v1/bot/email/stats", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/email/readall", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/email/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"email_id", f.email} })},
		{method: "POST", path: "/v1/bot/email/reply", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"email_id": f.email, "content": "Answered by a person."}
			}},
		{method: "DELETE", path: "/v1/bot/email/delete", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"email_id", f.email} })},
		{method: "POST", path: "/v1/bot/heartbeat/disable", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any { return map[string]any{"heartbeat_id": f.heartbeat} }},
		{method: "POST", path: "/v1/bot/heartbeat/enable", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any { return map[string]any{"heartbeat_id": f.heartbeat} }},
		{method: "POST", path: "/v1/bot/heartbeat/trigger", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any { return map[string]any{"heartbeat_id": f.heartbeat} }},
		{method: "GET", path: "/v1/bot/heartbeat/logs", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"heartbeat_id", f.heartbeat} })},
		{method: "GET", path: "/v1/bot/heartbeat/stats", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"heartbeat_id", f.heartbeat} })},
		{method: "DELETE", path: "/v1/bot/heartbeat/delete", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"heartbeat_id", f.heartbeat} })},

		{method: "POST", path: "/v1/bot/operator/create", scope: projectScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"name": "Another operator", "email": "another@example.com"}
			}},
		{method: "GET", path: "/v1/bot/operator/read", scope: operatorScope,
			query: q(func(f matrixFixture) []string { return []string{"operator_id", f.operator} })},
		{method: "GET", path: "/v1/bot/operator/readall", scope: projectScope, in: inQuery},
		{method: "PUT", path: "/v1/bot/operator/update", scope: operatorScope,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"operator_id": f.operator, "availability": "online"}
			}},
		{method: "DELETE", path: "/v1/bot/operator/delete", scope: operatorScope, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"operator_id", f.operator} })},
		{method: "GET", path: "/v1/bot/operator/me", scope: accountScope, asOperator: true},
		{method: "GET", path: "/v1/bot/inbox", scope: projectScope, in: inQuery},
		{method: "GET", path: "/v1/bot/inbox/stream", scope: projectScope, in: inQuery, noSnapshot: true, eventStream: true, until: "event: ready"},
		{method: "GET", path: "/v1/bot/inbox/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"chat_id", f.chat} })},
		{method: "POST", path: "/v1/bot/inbox/assign", scope: botScope, in: inBody, resource: true, foreign: refused,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"chat_id": f.chat, "operator_id": f.operator}
			}},
		{method: "POST", path: "/v1/bot/inbox/take", scope: botScope, in: inBody, resource: true, foreign: refused,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"chat_id": f.chat, "operator_id": f.operator}
			}},
		{method: "POST", path: "/v1/bot/inbox/reply", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"chat_id": f.chat, "content": "An operator's answer."}
			}},
		{method: "POST", path: "/v1/bot/inbox/note", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"chat_id": f.chat, "content": "An internal note."}
			}},
		{method: "POST", path: "/v1/bot/inbox/release", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any { return map[string]any{"chat_id": f.chat, "note": "Back to you."} }},
		{method: "POST", path: "/v1/bot/inbox/take", name: "again", scope: botScope, in: inBody, resource: true, foreign: refused, last: 1,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"chat_id": f.chat, "operator_id": f.operator}
			}},
		{method: "POST", path: "/v1/bot/inbox/close", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any { return map[string]any{"chat_id": f.chat} }},

		{method: "POST", path: "/v1/bot/source/create", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"type": "text", "title": "Another source", "source": "Another note."}
			}},
		{method: "GET", path: "/v1/bot/source/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"source_id", f.source} })},
		{method: "GET", path: "/v1/bot/source/readall", scope: botScope, in: inQuery},
		{method: "PUT", path: "/v1/bot/source/update", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"source_id": f.source, "description": "changed"}
			}},
		{method: "POST", path: "/v1/bot/source/sync", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any { return map[string]any{"source_id": f.source} }},
		{method: "DELETE", path: "/v1/bot/source/delete", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"source_id", f.source} })},
		{method: "POST", path: "/v1/bot/search", scope: botScope, in: inBody, resource: true, foreign: filters,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"keywords": "matrix notes", "source_ids": []string{f.source}}
			}},

		{method: "POST", path: "/v1/bot/a2a/key/create", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return map[string]any{"name": "matrix"} }},
		{method: "GET", path: "/v1/bot/a2a/key/readall", scope: botScope, in: inQuery},
		{method: "DELETE", path: "/v1/bot/a2a/key/delete", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"key_id", f.a2aKey} })},
		{method: "GET", path: "/v1/bot/subscriber/readall", scope: botScope, in: inQuery},
		{method: "POST", path: "/v1/bot/sso-secret", scope: botScope, in: inBody},
		{method: "GET", path: "/v1/bot/memory/readall", scope: botScope, in: inQuery},
		{method: "GET", path: "/v1/bot/memory/readall", name: "of a user", scope: botScope, in: inQuery, resource: true, foreign: filters,
			query: q(func(f matrixFixture) []string { return []string{"user_uuid", f.memoryUser, "type", "semantic"} })},
		{method: "GET", path: "/v1/bot/memory/count", scope: botScope, in: inQuery, resource: true, foreign: filters,
			query: q(func(f matrixFixture) []string { return []string{"user_uuid", f.memoryUser} })},
		{method: "DELETE", path: "/v1/bot/memory/:memory_id", scope: botScope, in: inQuery, resource: true, last: 2},
		{method: "GET", path: "/v1/models", scope: projectScope, in: inHeader},
		{method: "GET", path: "/v1/models/:model", scope: botScope, in: inHeader, botCode: "model_not_found"},
		{method: "POST", path: "/v1/chat/completions", scope: botScope, in: inHeader, resource: true, botCode: "model_not_found",
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"messages": []any{map[string]any{"role": "user", "content": "And what else?"}},
					"metadata": map[string]any{"chat_id": f.chat}, "reasoning_effort": "low"}
			}},
		{method: "POST", path: "/v1/responses", scope: botScope, in: inHeader, resource: true, botCode: "model_not_found",
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"input": "And what else?", "reasoning": map[string]any{"effort": "low"}, "previous_response_id": "resp_" + f.chat + "_0123456789ab"}
			}},
		{method: "GET", path: "/a2a/agents/:bot_id/.well-known/agent-card.json", scope: agentScope},
		{method: "POST", path: "/a2a/agents/:bot_id", scope: agentScope,
			body: func(matrixFixture) map[string]any {
				return map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{"message": map[string]any{
					"kind": "message", "messageId": "matrix", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "And what else?"}}}}}
			}},
		{method: "POST", path: "/v1/bot/chat", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"chat_id": f.chat, "message": "And what else?", "reasoning_mode": "standard"}
			}},
		{method: "POST", path: "/v1/bot/chat/execute-tool", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"executionId": f.execution, "approve": false}
			}},
		{method: "POST", path: "/v1/bot/chat/execute-tool", name: "by chat", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any { return map[string]any{"chat_id": f.pausedChat, "approve": false} }},
		// The stream of a run that ended is replayed and closed; the owner reads it once the run
		// was decided (execute-tool) and ended.
		{method: "GET", path: "/v1/bot/chat/stream", scope: botScope, in: inQuery, resource: true, last: 1, noSnapshot: true, eventStream: true,
			query: q(func(f matrixFixture) []string { return []string{"execution_id", f.execution} })},
		{method: "GET", path: "/v1/bot/chat/read", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"chat_id", f.chat} })},
		{method: "GET", path: "/v1/bot/chat/readall", scope: botScope, in: inQuery},
		{method: "DELETE", path: "/v1/bot/chat/delete", scope: botScope, in: inQuery, resource: true, last: 3,
			query: q(func(f matrixFixture) []string { return []string{"chat_id", f.chat} })},
		{method: "PUT", path: "/v1/bot/chat/rename", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any { return map[string]any{"chat_id": f.chat, "name": "Renamed chat"} }},
		{method: "PUT", path: "/v1/bot/chat/mode", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any { return map[string]any{"chat_id": f.chat, "mode": "ask"} }},
		{method: "PUT", path: "/v1/bot/chat/message/vote", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"message_id": f.message, "voter_id": "matrix", "vote_type": "up"}
			}},
		{method: "GET", path: "/v1/bot/chat/message/vote-status", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"message_id", f.message, "voter_id", "matrix"} })},
		{method: "DELETE", path: "/v1/bot/chat/message/delete", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"message_id", f.message} })},

		// Workspaces.
		{method: "GET", path: "/v1/bot/workspace/readall", scope: botScope, in: inQuery},
		{method: "POST", path: "/v1/bot/workspace/create", scope: botScope, in: inBody,
			body: func(matrixFixture) map[string]any { return map[string]any{"name": "Matrix workspace"} }},
		{method: "DELETE", path: "/v1/bot/workspace/delete", scope: botScope, in: inQuery, resource: true, last: 3,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace} })},
		{method: "GET", path: "/v1/bot/workspace/files", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace} })},
		{method: "GET", path: "/v1/bot/workspace/download", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace} })},
		{method: "GET", path: "/v1/bot/workspace/file", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace, "file_uuid", f.file} })},
		{method: "GET", path: "/v1/bot/workspace/file", name: "version", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string {
				return []string{"workspace_uuid", f.workspace, "file_uuid", f.file, "version", "1"}
			})},
		{method: "POST", path: "/v1/bot/workspace/file", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workspace_uuid": f.workspace, "file_path": "matrix-new.html", "content": "<p>new</p>"}
			}},
		{method: "PUT", path: "/v1/bot/workspace/file", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workspace_uuid": f.workspace, "file_uuid": f.file, "content": "<p>changed</p>"}
			}},
		{method: "PUT", path: "/v1/bot/workspace/file", name: "by path", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workspace_uuid": f.workspace, "file_path": f.filePath, "content": "<p>changed by path</p>"}
			}},
		{method: "PUT", path: "/v1/bot/workspace/file/rename", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workspace_uuid": f.workspace, "old_path": f.filePath, "new_path": "moved.html"}
			}},
		{method: "POST", path: "/v1/bot/workspace/file/restore", scope: botScope, in: inBody, resource: true, last: 2,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workspace_uuid": f.workspace, "file_uuid": f.file, "version": 1}
			}},
		{method: "DELETE", path: "/v1/bot/workspace/file", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace, "file_uuid", f.file} })},
		{method: "GET", path: "/v1/bot/workspace/trash", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace} })},
		{method: "POST", path: "/v1/bot/workspace/file/undelete", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workspace_uuid": f.workspace, "file_uuid": f.trashed}
			}},
		{method: "GET", path: "/v1/bot/workspace/suggest-subdomain", scope: botScope, in: inQuery, resource: true,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace} })},
		{method: "PUT", path: "/v1/bot/workspace/publish", scope: botScope, in: inBody, resource: true, last: 1,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workspace_uuid": f.workspace, "subdomain": "site-" + strings.ToLower(f.workspace[:8])}
			}},
		{method: "PUT", path: "/v1/bot/workspace/unpublish", scope: botScope, in: inBody, resource: true, last: 2,
			body: func(f matrixFixture) map[string]any { return map[string]any{"workspace_uuid": f.workspace} }},
		{method: "POST", path: "/v1/bot/workspace/domain/add", scope: botScope, in: inBody, resource: true,
			body: func(f matrixFixture) map[string]any {
				return map[string]any{"workspace_uuid": f.workspace, "custom_domain": "site-" + strings.ToLower(f.workspace[:8]) + ".shop.test"}
			}},
		{method: "GET", path: "/v1/bot/workspace/domain/status", scope: botScope, in: inQuery, resource: true, last: 1, noSnapshot: true,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace} })},
		{method: "GET", path: "/v1/bot/workspace/domain/info", scope: botScope, in: inQuery, resource: true, last: 1,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace} })},
		{method: "DELETE", path: "/v1/bot/workspace/domain/remove", scope: botScope, in: inQuery, resource: true, last: 2,
			query: q(func(f matrixFixture) []string { return []string{"workspace_uuid", f.workspace} })},

		{method: "GET", path: "/v1/bot/stats/summary", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/votes", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/performance", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/reasoning-summary", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/dashboard", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/tools", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/workflows", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/errors", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/handoffs", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/behavior", scope: botScope, in: inQuery, query: statsWindow},
		{method: "GET", path: "/v1/bot/stats/online", scope: botScope, in: inQuery, query: statsWindow},
	}
}

func matrixWorkflow(name, hookURL string) map[string]any {
	return map[string]any{"name": name, "trigger_type": "manual",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hookURL + "/matrix"}}}}
}

// Every route under /v1 and /a2a the server registers (but the admin ones and the OpenAPI document) has
// a row of the matrix, and every row is a registered route: a new route without one fails here.
func TestTenancyMatrixCoversEveryRoute(t *testing.T) {
	t.Parallel()
	h := api.NewServer(api.Deps{})
	engine, ok := h.(*gin.Engine)
	if !ok {
		t.Fatalf("api.NewServer returned a %T, not the gin engine whose routes this test lists", h)
	}
	registered := map[string]bool{}
	for _, r := range engine.Routes() {
		if !(strings.HasPrefix(r.Path, "/v1/") || strings.HasPrefix(r.Path, "/a2a/")) || strings.HasPrefix(r.Path, "/v1/admin/") || r.Path == "/v1/openapi.json" {
			continue
		}
		registered[r.Method+" "+r.Path] = true
	}
	if len(registered) < 50 {
		t.Fatalf("only %d routes under /v1: %v", len(registered), registered)
	}
	rows := map[string]bool{}
	for _, r := range tenancyMatrix("http://hooks.invalid", "http://mcp.invalid", "http://telegram.invalid") {
		k := r.method + " " + r.path
		rows[k] = true
		if !registered[k] {
			t.Errorf("the matrix has a row for %s, which is not a route", k)
		}
	}
	var missing []string
	for k := range registered {
		if !rows[k] {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	for _, k := range missing {
		t.Errorf("%s has no row in the tenancy matrix (api/tenancy_matrix_test.go)", k)
	}
}

// matrixTenant is one tenant's fixtures and what in an answer would be its data.
type matrixTenant struct {
	matrixFixture
	// markers are its ids and the tag every name of its data carries.
	markers []string
}

// matrixEnv makes fixtures over one server.
type matrixEnv struct {
	b         *bundle
	hook, mcp string
	// telegram is the Telegram API the tenants' channels reach.
	telegram *telegramtest.Server
}

func (m matrixEnv) do(t *testing.T, r apitest.Request) map[string]any {
	t.Helper()
	res := m.b.client.Do(r)
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)
}

// tenant creates the account's fixtures, tagged tag, in project with key: a spare key, an
// agent with a ready source, a chat, a deal, a contact, a pipeline with a stage and a workflow
// that ran. The paused runs come later (pause).
func (m matrixEnv) tenant(t *testing.T, key, project, tag string) *matrixTenant {
	t.Helper()
	f := matrixFixture{key: key, project: project}
	scoped := func(body map[string]any) map[string]any {
		body["project_id"], body["bot_id"] = f.project, f.bot
		return body
	}
	spare := m.do(t, apitest.Request{Method: "POST", Path: "/v1/keys", Key: key, Body: map[string]any{"name": "spare " + tag}})
	f.keyID = spare["key"].(map[string]any)["id"].(string)
	secret := m.do(t, apitest.Request{Method: "GET", Path: "/v1/projects/" + project + "/signing-secret", Key: key})["signing_secret"].(string)
	bot := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/create", Key: key,
		Body: map[string]any{"project_id": project, "name": "Bot " + tag, "model": "gpt-4o-mini"}})["bot"].(map[string]any)
	f.bot = bot["id"].(string)
	m.do(t, apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: key, Body: scoped(map[string]any{"heartbeat": 1, "instruction": "Matrix of " + tag})})
	f.a2aKey = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/a2a/key/create", Key: key,
		Body: scoped(map[string]any{"name": "A2A " + tag})})["key"].(map[string]any)["id"].(string)
	f.channel = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/channel/create", Key: key, Body: scoped(map[string]any{
		"type": "telegram", "name": "Channel of " + tag, "api_base_url": m.telegram.URL,
		"credentials": map[string]any{"bot_token": m.telegram.Token}})})["channel"].(map[string]any)["id"].(string)
	f.heartbeat = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/heartbeat/configure", Key: key, Body: scoped(map[string]any{
		"prompt": "Heartbeat of " + tag, "cron_pattern": "0 9 * * *"})})["heartbeat"].(map[string]any)["uuid"].(string)
	op := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/operator/create", Key: key, Body: map[string]any{
		"project_id": project, "name": "Operator " + tag, "email": tag + "@example.com"}})
	f.operator, f.operatorToken = op["operator"].(map[string]any)["id"].(string), op["token"].(string)

	f.source = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/source/create", Key: key, Body: scoped(map[string]any{
		"type": "text", "title": "Source " + tag, "source": "Matrix notes of " + tag + ": the kiln is fired on Tuesdays."})})["source"].(map[string]any)["id"].(string)
	chat := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/chat", Key: key, Body: scoped(map[string]any{
		"message": "Hello from " + tag, "reasoning_mode": "standard"})})["chat"].(map[string]any)
	f.chat = chat["chat_id"].(string)
	f.message = chat["agent"].(map[string]any)["uuid"].(string)
	m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/inbox/take", Key: key, Body: scoped(map[string]any{"chat_id": f.chat, "operator_id": f.operator})})
	f.deal = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/crm/deals", Key: key, Body: scoped(map[string]any{
		"title": "Deal " + tag, "value": 1234})})["deal"].(map[string]any)["uuid"].(string)
	f.contactName = "Contact " + tag
	f.contact = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/crm/contacts", Key: key, Body: scoped(map[string]any{
		"name": f.contactName, "email": tag + "@example.com"})})["contact"].(map[string]any)["uuid"].(string)
	f.field = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/crm/fields", Key: key, Body: scoped(map[string]any{
		"label": "Field " + tag})})["field"].(map[string]any)["uuid"].(string)
	f.task = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/crm/tasks", Key: key, Body: scoped(map[string]any{
		"title": "Task " + tag, "deal_id": f.deal, "contact_id": f.contact, "due_at": "2030-01-01"})})["task"].(map[string]any)["uuid"].(string)
	pl := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/crm/pipelines", Key: key, Body: scoped(map[string]any{
		"name": "Pipeline " + tag, "stages": []any{map[string]any{"name": "Stage " + tag}}})})["pipeline"].(map[string]any)
	f.pipeline = pl["uuid"].(string)
	f.stage = pl["stages"].([]any)[0].(map[string]any)["uuid"].(string)
	f.defaultPipeline = m.do(t, apitest.Request{Method: "GET", Path: "/v1/bot/crm/pipelines?project_id=" + f.project + "&bot_id=" + f.bot,
		Key: key})["pipelines"].([]any)[0].(map[string]any)["uuid"].(string)
	f.workflow = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: key,
		Body: scoped(matrixWorkflow("Workflow "+tag, m.hook))})["workflow"].(map[string]any)["uuid"].(string)
	f.run = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/workflow/run", Key: key,
		Body: scoped(map[string]any{"workflow_id": f.workflow})})["run"].(map[string]any)["uuid"].(string)
	f.tool = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/tool", Key: key,
		Body: scoped(shopTool("Tool "+tag, m.mcp, ""))})["tool"].(map[string]any)["id"].(string)
	f.server = m.do(t, apitest.Request{Method: "POST", Path: "/v1/mcp/create/from-openapi", Key: key, Body: map[string]any{
		"project_id": project, "name": "Server " + tag, "openApiSpec": ordersSpec, "baseUrl": "https://orders.example.com"}})["server"].(map[string]any)["id"].(string)

	// Wait for the source's ingestion and the run's end, so that the tenant's data stays put.
	q := "project_id=" + f.project + "&bot_id=" + f.bot
	until := time.Now().Add(30 * time.Second)
	for {
		src := m.do(t, apitest.Request{Method: "GET", Path: "/v1/bot/source/read?" + q + "&source_id=" + f.source, Key: key})["source"].(map[string]any)
		run := m.do(t, apitest.Request{Method: "GET", Path: "/v1/bot/workflow/run/read?" + q + "&run_id=" + f.run, Key: key})["run"].(map[string]any)
		if src["status"] == "success" && (run["status"] == "succeeded" || run["status"] == "failed") {
			break
		}
		if time.Now().After(until) {
			t.Fatalf("fixtures not ready: source %v, run %v", src["status"], run["status"])
		}
		waitABit()
	}
	f.workspace, f.file, f.filePath, f.trashed = m.workspace(t, f, tag)
	f.dataset = m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/eval/dataset/create", Key: key, Body: scoped(map[string]any{
		"name": "Dataset " + tag, "cases": []any{map[string]any{"input": "Question of " + tag, "expected_answer": "Answer of " + tag}}})})["dataset"].(map[string]any)["uuid"].(string)
	f.evalRun = m.evalRun(t, f)
	f.memory, f.memoryUser = m.remembered(t, f, "My name is Matrix.")
	f.email = m.mailed(t, f, tag)
	var keys struct{ Keys []struct{ ID string } }
	res := m.b.client.Do(apitest.Request{Method: "GET", Path: "/v1/keys", Key: key})
	res.Decode(t, &keys)
	tn := &matrixTenant{matrixFixture: f}
	tn.markers = []string{tag, key, secret, project, f.bot, bot["uuid"].(string), f.source, f.chat, f.message,
		chat["user"].(map[string]any)["uuid"].(string), f.deal, f.contact, f.pipeline, f.stage, f.defaultPipeline, f.workflow, f.run, f.tool, f.server, f.heartbeat}
	for _, k := range keys.Keys {
		tn.markers = append(tn.markers, k.ID)
	}
	tn.markers = append(tn.markers, f.memory, f.memoryUser, f.operator, f.operatorToken, f.email, f.field, f.task)
	tn.markers = append(tn.markers, f.workspace, f.file, f.trashed, f.dataset, f.evalRun)
	return tn
}

// evalRun runs f's dataset against its agent and returns the run's id once it is done, so that
// the tenant's data stays put.
func (m matrixEnv) evalRun(t *testing.T, f matrixFixture) string {
	t.Helper()
	q := "project_id=" + f.project + "&bot_id=" + f.bot
	id := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/eval/run/create", Key: f.key, Body: map[string]any{
		"project_id": f.project, "bot_id": f.bot, "dataset_id": f.dataset}})["run"].(map[string]any)["uuid"].(string)
	until := time.Now().Add(30 * time.Second)
	for m.do(t, apitest.Request{Method: "GET", Path: "/v1/bot/eval/run/read?" + q + "&run_id=" + id, Key: f.key})["run"].(map[string]any)["status"] != "succeeded" {
		if time.Now().After(until) {
			t.Fatalf("eval run %s not done in time", id)
		}
		waitABit()
	}
	return id
}

// workspace creates a workspace of f's agent with a file changed once, and returns their uuids
// and the file's path.
func (m matrixEnv) workspace(t *testing.T, f matrixFixture, tag string) (string, string, string, string) {
	t.Helper()
	scoped := func(body map[string]any) map[string]any {
		body["project_id"], body["bot_id"] = f.project, f.bot
		return body
	}
	ws := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/workspace/create", Key: f.key, Body: scoped(map[string]any{
		"name": "Workspace " + tag})})["workspace"].(map[string]any)["uuid"].(string)
	const p = "matrix.html"
	file := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/workspace/file", Key: f.key, Body: scoped(map[string]any{
		"workspace_uuid": ws, "file_path": p, "content": "<h1>" + tag + "</h1>"})})["file"].(map[string]any)["uuid"].(string)
	m.do(t, apitest.Request{Method: "PUT", Path: "/v1/bot/workspace/file", Key: f.key, Body: scoped(map[string]any{
		"workspace_uuid": ws, "file_uuid": file, "content": "<h1>" + tag + " again</h1>"})})
	trashed := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/workspace/file", Key: f.key, Body: scoped(map[string]any{
		"workspace_uuid": ws, "file_path": "matrix-deleted.html", "content": "<p>" + tag + " deleted</p>"})})["file"].(map[string]any)["uuid"].(string)
	m.do(t, apitest.Request{Method: "DELETE", Path: "/v1/bot/workspace/file?" + qs("project_id", f.project, "bot_id", f.bot, "workspace_uuid", ws, "file_uuid", trashed), Key: f.key})
	return ws, file, p, trashed
}

// mailed delivers a message to f's agent, whose inbox files it (reply_mode off), and returns
// its id once it is filed.
func (m matrixEnv) mailed(t *testing.T, f matrixFixture, tag string) string {
	t.Helper()
	q := "project_id=" + f.project + "&bot_id=" + f.bot
	m.do(t, apitest.Request{Method: "PUT", Path: "/v1/bot/email/settings", Key: f.key, Body: map[string]any{"project_id": f.project, "bot_id": f.bot,
		"reply_mode": "off"}})
	address := m.do(t, apitest.Request{Method: "GET", Path: "/v1/bot/email/address?" + q, Key: f.key})["email_address"].(string)
	d, err := m.b.app.Domain()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Email.Deliver(t.Context(), email.Inbound{Recipients: []string{address}, From: email.Address{Address: tag + "@example.com"},
		Subject: "Mail of " + tag, MessageID: "mail-" + tag + "@example.com", Text: "A letter from " + tag}); err != nil {
		t.Fatal(err)
	}
	for until := time.Now().Add(30 * time.Second); ; waitABit() {
		list := m.do(t, apitest.Request{Method: "GET", Path: "/v1/bot/email/readall?" + q, Key: f.key})["emails"].([]any)
		if len(list) == 1 && list[0].(map[string]any)["status"] == "filed" {
			return list[0].(map[string]any)["uuid"].(string)
		}
		if time.Now().After(until) {
			t.Fatalf("the email was not filed: %v", list)
		}
	}
}

// remembered says text to f's agent (the provider's structured answer is what is extracted)
// and returns, once the worker kept it, the memory and its user.
func (m matrixEnv) remembered(t *testing.T, f matrixFixture, text string) (string, string) {
	t.Helper()
	m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/chat", Key: f.key, Body: map[string]any{"project_id": f.project, "bot_id": f.bot,
		"message": text, "reasoning_mode": "standard"}})
	for until := time.Now().Add(30 * time.Second); ; waitABit() {
		list := m.do(t, apitest.Request{Method: "GET", Path: "/v1/bot/memory/readall?project_id=" + f.project + "&bot_id=" + f.bot, Key: f.key})
		if ms := list["memories"].([]any); len(ms) == 1 {
			mem := ms[0].(map[string]any)
			return mem["id"].(string), mem["user_uuid"].(string)
		}
		if time.Now().After(until) {
			t.Fatalf("no memory of %q was kept", text)
		}
	}
}

// pause starts two agent runs of the tenant that wait for the approval of a create_deal: the
// first's execution id and the second's chat are what execute-tool decides.
func (m matrixEnv) pause(t *testing.T, tn *matrixTenant) {
	t.Helper()
	for i := range 2 {
		chat := m.do(t, apitest.Request{Method: "POST", Path: "/v1/bot/chat", Key: tn.key, Body: map[string]any{
			"project_id": tn.project, "bot_id": tn.bot, "message": "Create a deal, please", "reasoning_mode": "agent"}})["chat"].(map[string]any)
		if chat["requiresApproval"] != true {
			t.Fatalf("the run did not pause: %v", chat)
		}
		exec, chatID := chat["executionId"].(string), chat["chat_id"].(string)
		if i == 0 {
			tn.execution = exec
		} else {
			tn.pausedChat = chatID
		}
		tn.markers = append(tn.markers, exec, chatID)
	}
}

// snapshot is the answers of the matrix's GETs as the tenant itself: its data at one time.
func (m matrixEnv) snapshot(t *testing.T, rows []matrixRow, tn *matrixTenant, withAccount bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range rows {
		if r.method != "GET" || r.noSnapshot || (r.scope == accountScope && !withAccount) {
			continue
		}
		res := m.b.client.Do(r.request(tn.matrixFixture))
		out[r.label()] = fmt.Sprintf("%d %s", res.Status, res.Body)
	}
	return out
}

// variation is one way of calling a row as someone it must refuse.
type variation struct {
	name string
	// f is the request's fixture; like is the same request with the other tenant's ids replaced
	// by ids that do not exist, which must get the same answer (nil: not compared).
	f, like *matrixFixture
	// victim is the tenant whose data must not be in the answer.
	victim *matrixTenant
	status int
	code   string
}

func variations(r matrixRow, a, b *matrixTenant) []variation {
	ptr := func(f matrixFixture) *matrixFixture { return &f }
	// Another account's key, with A's ids everywhere.
	otherKey := a.matrixFixture
	otherKey.key, otherKey.operatorToken = b.key, b.operatorToken
	missingForB := missingFixture(b.key)
	// A's key with B's project, agent and resources.
	otherProject := b.matrixFixture
	otherProject.key = a.key
	missingForA := missingFixture(a.key)
	// A's key, project and resources with B's agent.
	otherAgent := a.matrixFixture
	otherAgent.bot = b.bot
	noAgent := a.matrixFixture
	noAgent.bot = missingForA.bot
	switch r.scope {
	case accountScope:
		return []variation{{name: "other-key", f: &otherKey, victim: a, status: http.StatusOK}}
	case agentScope:
		noAgentForB := otherKey
		noAgentForB.bot = missingForB.bot
		return []variation{
			{name: "other-key", f: &otherKey, like: &noAgentForB, victim: a, status: http.StatusNotFound, code: "bot_not_found"},
			{name: "other-agent", f: &otherAgent, like: &noAgent, victim: b, status: http.StatusNotFound, code: "bot_not_found"},
		}
	case keyScope, operatorScope:
		code := "key_not_found"
		if r.scope == operatorScope {
			code = "operator_not_found"
		}
		return []variation{
			{name: "other-key", f: &otherKey, like: ptr(otherKey.naming(missingForB)), victim: a, status: http.StatusNotFound, code: code},
			{name: "other-resource", f: ptr(a.naming(b.matrixFixture)), like: ptr(a.naming(missingForA)), victim: b, status: http.StatusNotFound, code: code},
		}
	}
	vs := []variation{
		{name: "other-key", f: &otherKey, like: &missingForB, victim: a, status: http.StatusNotFound, code: "project_not_found"},
		{name: "other-project", f: &otherProject, like: &missingForA, victim: b, status: http.StatusNotFound, code: "project_not_found"},
	}
	if r.scope == botScope {
		// A request that names no project addresses its agent's own: another account's agent is
		// not found, like a missing one.
		agentAlone, missingAlone := otherAgent, noAgent
		agentAlone.project, missingAlone.project = "", ""
		code := "bot_not_found"
		if r.botCode != "" {
			code = r.botCode
		}
		vs = append(vs, variation{name: "other-agent", f: &otherAgent, like: &noAgent, victim: b, status: http.StatusNotFound, code: code},
			variation{name: "other-account-agent-without-project", f: &agentAlone, like: &missingAlone, victim: b, status: http.StatusNotFound, code: code})
	}
	if r.resource {
		status := http.StatusNotFound
		if r.foreign != 0 {
			status = r.foreign
		}
		vs = append(vs, variation{name: "other-resource", f: ptr(a.naming(b.matrixFixture)), like: ptr(a.naming(missingForA)), victim: b, status: status})
	}
	return vs
}

// errorOf is the code, message and details of an error answer.
func errorOf(t *testing.T, res *apitest.Response) string {
	t.Helper()
	var e struct {
		Error struct {
			Code, Message string
			Details       any
		}
	}
	res.Decode(t, &e)
	d, _ := json.Marshal(e.Error.Details)
	return e.Error.Code + ": " + e.Error.Message + " " + string(d)
}

func TestTenancyMatrix(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	// Every row's requests, and their variations, come from one key in a minute or two.
	b := setup(t, withProvider(fake.URL), withRateLimit(5000))
	b.startWorker(t, workerOptions{})
	hook := newReceiver(t)
	peer := startMCP(t)
	m := matrixEnv{b: b, hook: hook.URL, mcp: peer.streamable, telegram: telegramtest.New(t, "7:matrix-token")}
	rows := tenancyMatrix(hook.URL, peer.streamable, m.telegram.URL)

	start := time.Now()
	fake.Set(providertest.Behavior{Reply: "Fixture reply.", Structured: `{"memories":[{"type":"semantic","subject":"name","content":"The user's name is Matrix."}]}`})
	otherKey, otherProject := b.newTenant(t)
	a := m.tenant(t, b.key, b.project.ID, "ta"+strings.ToLower(testenv.NewName()))
	o := m.tenant(t, otherKey, otherProject.ID, "tb"+strings.ToLower(testenv.NewName()))
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Paused deal"}`), {Reply: "Decided."}}})
	m.pause(t, a)
	m.pause(t, o)
	fake.Set(providertest.Behavior{Reply: "Owner reply."})

	beforeA, beforeB := m.snapshot(t, rows, a, true), m.snapshot(t, rows, o, false)
	checked, compared := 0, 0
	t.Run("Refused", func(t *testing.T) {
		for _, r := range rows {
			vs := variations(r, a, o)
			checked += len(vs)
			for _, v := range vs {
				if v.like != nil {
					compared++
				}
			}
			t.Run(r.label(), func(t *testing.T) {
				t.Parallel()
				for _, v := range vs {
					res := b.client.Do(r.request(*v.f))
					if res.Status != v.status {
						t.Errorf("%s: status %d, want %d; body %s", v.name, res.Status, v.status, res.Body)
						continue
					}
					if v.code != "" {
						if got := res.ErrorCode(t); got != v.code {
							t.Errorf("%s: error code %q, want %q", v.name, got, v.code)
						}
					}
					for _, mk := range v.victim.markers {
						if strings.Contains(string(res.Body), mk) {
							t.Errorf("%s: the answer shows the other tenant's %q: %s", v.name, mk, res.Body)
						}
					}
					if v.like == nil {
						continue
					}
					like := b.client.Do(r.request(*v.like))
					switch {
					case like.Status != res.Status:
						t.Errorf("%s: status %d, but %d for ids that do not exist", v.name, res.Status, like.Status)
					case res.Status >= 400 && errorOf(t, res) != errorOf(t, like):
						t.Errorf("%s: %s, but %s for ids that do not exist", v.name, errorOf(t, res), errorOf(t, like))
					case res.Status < 400 && string(res.Body) != string(like.Body):
						t.Errorf("%s: %s, but %s for ids that do not exist", v.name, res.Body, like.Body)
					}
				}
			})
		}
	})

	t.Run("Unchanged", func(t *testing.T) {
		for who, s := range map[string][2]map[string]string{
			"A": {beforeA, m.snapshot(t, rows, a, true)}, "B": {beforeB, m.snapshot(t, rows, o, false)}} {
			for k, before := range s[0] {
				if after := s[1][k]; after != before {
					t.Errorf("%s's %s changed:\nbefore %s\nafter  %s", who, k, before, after)
				}
			}
		}
	})

	defer func() {
		t.Logf("%d routes in %d rows: %d refused requests, %d of them compared with ids that do not exist; %v",
			len(registeredIn(rows)), len(rows), checked, compared, time.Since(start).Round(time.Millisecond))
	}()
	// Last, every request works for its owner (so that the refusals above are about whose ids
	// they name, not about the request): those that remove fixtures after the others.
	t.Run("Owner", func(t *testing.T) {
		order := slices.Clone(rows)
		slices.SortStableFunc(order, func(x, y matrixRow) int { return x.last - y.last })
		for _, r := range order {
			req := r.request(a.matrixFixture)
			if r.eventStream {
				until := cmp.Or(r.until, "event: done")
				status, body := rawRequest(t, b.client.URL, req, until)
				if status != http.StatusOK || !strings.Contains(body, until) {
					t.Errorf("%s as its owner: status %d; body %s", r.label(), status, body)
				}
				continue
			}
			if res := b.client.Do(req); res.Status != http.StatusOK {
				t.Errorf("%s as its owner: status %d; body %s", r.label(), res.Status, res.Body)
			}
		}
	})
}

// rawRequest sends a request without a body and reads the whole answer, outside apitest.
func rawRequest(t *testing.T, baseURL string, r apitest.Request, until string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(r.Method, baseURL+r.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.Key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(body.String(), until) {
		n, err := res.Body.Read(buf)
		body.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return res.StatusCode, body.String()
}

// registeredIn is the distinct routes of rows.
func registeredIn(rows []matrixRow) map[string]bool {
	out := map[string]bool{}
	for _, r := range rows {
		out[r.method+" "+r.path] = true
	}
	return out
}

// The tools of an agent run act for the run's project and agent only: a model (or an approval's
// parameters) naming another account's deal or workflow is refused, and that data is unchanged.
func TestTenancyMatrixToolArguments(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"auto_approve_tools": 1})
	mine := b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Mine", "value": 10}))

	otherKey, otherProject := b.newTenant(t)
	tag := "tb" + strings.ToLower(testenv.NewName())
	do := func(method, path string, body map[string]any) map[string]any {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: method, Path: path, Key: otherKey, Body: body})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)
	}
	otherBot := do("POST", "/v1/bot/create", map[string]any{"project_id": otherProject.ID, "name": "Bot " + tag, "model": "gpt-4o-mini"})["bot"].(map[string]any)["id"].(string)
	scope := func(m map[string]any) map[string]any {
		m["project_id"], m["bot_id"] = otherProject.ID, otherBot
		return m
	}
	secret := do("POST", "/v1/bot/crm/deals", scope(map[string]any{"title": "Deal " + tag, "value": 999}))["deal"].(map[string]any)["uuid"].(string)
	hook := newReceiver(t)
	wf := do("POST", "/v1/bot/workflow/create", scope(matrixWorkflow("Workflow "+tag, hook.URL)))["workflow"].(map[string]any)["uuid"].(string)
	task := do("POST", "/v1/bot/crm/tasks", scope(map[string]any{"title": "Task " + tag}))["task"].(map[string]any)["uuid"].(string)
	q := "?project_id=" + otherProject.ID + "&bot_id=" + otherBot
	dealBefore := do("GET", "/v1/bot/crm/deals/"+secret+q, nil)
	tasksBefore := do("GET", "/v1/bot/crm/tasks"+q, nil)

	refused := func(t *testing.T, c map[string]any, action string) {
		t.Helper()
		obs, _ := c["observation"].(string)
		if c["action"] != action || c["actionSuccess"] != false || !strings.Contains(obs, "not found") || strings.Contains(obs, tag) {
			t.Errorf("%s naming another account's data was not refused: %v", action, c)
		}
	}
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("get_deal", fmt.Sprintf(`{"deal_id":%q}`, secret)),
		call("update_deal", fmt.Sprintf(`{"deal_id":%q,"title":"Taken","value":1}`, secret)),
		call("run_workflow", fmt.Sprintf(`{"workflow_id":%q}`, wf)),
		call("list_deals", `{}`),
		call("complete_task", fmt.Sprintf(`{"task_id":%q}`, task)),
		call("create_task", fmt.Sprintf(`{"title":"Follow up","deal_id":%q}`, secret)),
		{Reply: "Done."},
	}})
	_, chat := a.chat(t, map[string]any{"message": "Look at that deal, change it and run the workflow", "reasoning_mode": "agent"})
	if chat == nil {
		t.Fatal("no answer")
	}
	cs := cycles(t, chat)
	if len(cs) != 6 {
		t.Fatalf("%d cycles: %v", len(cs), cs)
	}
	refused(t, cs[0], "get_deal")
	refused(t, cs[1], "update_deal")
	refused(t, cs[2], "run_workflow")
	if obs := cs[3]["observation"].(string); cs[3]["actionSuccess"] != true || !strings.Contains(obs, mine.UUID) || strings.Contains(obs, secret) || strings.Contains(obs, tag) {
		t.Errorf("list_deals %v", cs[3])
	}
	refused(t, cs[4], "complete_task")
	// A task linked to another account's deal is refused as a deal the agent does not have.
	if obs, _ := cs[5]["observation"].(string); cs[5]["actionSuccess"] != false || !strings.Contains(obs, "deal_id must be the uuid of a deal of the agent") {
		t.Errorf("create_task naming another account's deal was not refused: %v", cs[5])
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/tasks?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if mineTasks := res.JSON(t); mineTasks["total"] != float64(0) {
		t.Errorf("a task was made with another account's deal: %v", mineTasks)
	}

	// An approval whose parameters replace the model's deal with another account's.
	a2 := b.chatBot(t, map[string]any{"provider_key": "sk-run-key"})
	own := b.deal(t, "POST", "/v1/bot/crm/deals", a2.body(map[string]any{"title": "Own", "value": 5}))
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("update_deal", fmt.Sprintf(`{"deal_id":%q,"value":6}`, own.UUID)),
		{Reply: "Updated."},
	}})
	_, paused := a2.chat(t, map[string]any{"message": "Raise the deal's value", "reasoning_mode": "agent"})
	if paused == nil || paused["requiresApproval"] != true {
		t.Fatalf("not paused: %v", paused)
	}
	_, done := a2.executeTool(t, map[string]any{"executionId": paused["executionId"], "approve": true,
		"parameters": map[string]any{"deal_id": secret, "title": "Taken", "value": 1}})
	if done == nil {
		t.Fatal("no answer after the approval")
	}
	if cs := cycles(t, done); len(cs) != 1 {
		t.Fatalf("cycles %v", cs)
	} else {
		refused(t, cs[0], "update_deal")
	}

	if after := do("GET", "/v1/bot/crm/deals/"+secret+q, nil); fmt.Sprint(after) != fmt.Sprint(dealBefore) {
		t.Errorf("another account's deal changed: %v, was %v", after, dealBefore)
	}
	if runs := do("GET", "/v1/bot/workflow/runs"+q, nil); runs["total"] != float64(0) {
		t.Errorf("another account's workflow ran: %v", runs)
	}
	if after := do("GET", "/v1/bot/crm/tasks"+q, nil); fmt.Sprint(after) != fmt.Sprint(tasksBefore) {
		t.Errorf("another account's task changed: %v, was %v", after, tasksBefore)
	}
}
