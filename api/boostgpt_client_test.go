package api_test

import (
	"archive/zip"
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
)

// boostClient talks as BoostGPT's Node client (v3.5) does: ONE request body per client object,
// mutated call after call and sent whole each time (so every call carries the fields of the
// calls before it), nulls for options it was not given, integer flags as strings, parameters of
// GET and DELETE in the query string (DELETE with a JSON content type and no body), and an
// answer read as an error only when error.status >= 400.
type boostClient struct {
	t    *testing.T
	b    *bundle
	body map[string]any
}

// call sends the shared body (POST, PUT) or query (GET, DELETE) and returns the answer as the
// client reads it: failing when error.status >= 400, else the JSON.
func (c *boostClient) call(method, path string, set map[string]any, query ...string) map[string]any {
	c.t.Helper()
	for k, v := range set {
		c.body[k] = v
	}
	req := apitest.Request{Method: method, Path: path, Key: c.b.key}
	switch method {
	case http.MethodGet, http.MethodDelete:
		q := url.Values{}
		for i := 0; i+1 < len(query); i += 2 {
			q.Set(query[i], query[i+1])
		}
		req.Path += "?" + q.Encode()
		if method == http.MethodDelete {
			req.ContentType = "application/json"
		}
	default:
		req.Body = c.body
	}
	res := c.b.client.Do(req)
	out := res.JSON(c.t)
	if e, ok := out["error"].(map[string]any); ok && e["status"].(float64) >= 400 {
		c.t.Fatalf("%s %s: the client sees an error: %v (%s)", method, path, out["message"], res.Body)
	}
	return out
}

// A realistic session of BoostGPT's client, from a new agent to deletes, with the one body it
// keeps mutating.
func TestBoostGPTClientSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	c := &boostClient{t: t, b: b, body: map[string]any{"project_id": b.project.ID}}
	p := b.project.ID

	bot := c.call("POST", "/v1/bot/create", map[string]any{"name": "Support", "model": "gpt-4o-mini",
		"instruction": "Answer from the docs.", "max_reply_tokens": nil, "top": nil, "status": nil, "reasoning_mode": ""})["bot"].(map[string]any)
	botID := bot["uuid"].(string)
	c.body["bot_id"] = botID
	c.call("PUT", "/v1/bot/update", map[string]any{"status": "1", "memory": "1", "top": "3", "heartbeat": "1"})

	src := c.call("POST", "/v1/bot/source/create", map[string]any{"type": "text", "title": "Hours",
		"source": "The shop opens at nine and closes at six on weekdays.", "forget_after": "never", "tags": []any{"hours"}})["source"].(map[string]any)
	b.waitSource(t, bot["id"].(string), src["id"].(string))
	if found := c.call("POST", "/v1/bot/search", map[string]any{"keywords": "when does the shop close", "top": nil, "source_ids": nil})["results"].([]any); len(found) == 0 {
		t.Fatal("search found nothing")
	}

	chat := c.call("POST", "/v1/bot/chat", map[string]any{"message": "When does the shop close?", "memory": true, "chat_id": nil, "stream": false})["chat"].(map[string]any)
	chatID := chat["chat_id"].(string)
	if !strings.Contains(chat["reply"].(string), "six") || chat["type"] != "standard" {
		t.Fatalf("reply %v", chat["reply"])
	}
	// The body now carries the chat's boolean memory into the agent's update, whose memory is a
	// 0/1 flag: true is 1.
	if updated := c.call("PUT", "/v1/bot/update", map[string]any{"top": "4"})["bot"].(map[string]any); updated["memory"] != float64(1) || updated["top"] != float64(4) {
		t.Fatalf("agent updated with the chat's fields: %v", updated)
	}
	hist := c.call("GET", "/v1/bot/chat/read", nil, "project_id", p, "bot_id", botID, "chat_id", chatID, "page", "1", "per_page", "10")
	if hist["total"] != float64(2) {
		t.Fatalf("history %v", hist)
	}
	agentMsg := chat["agent"].(map[string]any)["uuid"].(string)
	c.call("PUT", "/v1/bot/chat/message/vote", map[string]any{"message_id": agentMsg, "voter_id": "u1", "voter_type": "user", "vote_type": "up"})
	c.call("PUT", "/v1/bot/chat/rename", map[string]any{"chat_id": chatID, "name": "Opening hours"})
	if chats := c.call("GET", "/v1/bot/chat/readall", nil, "project_id", p, "bot_id", botID); chats["total"] != float64(1) {
		t.Fatalf("chats %v", chats)
	}

	deal := c.call("POST", "/v1/bot/crm/deals", map[string]any{"title": "Pilot", "value": "1200", "status": nil, "stage": nil, "currency": nil})["deal"].(map[string]any)
	c.call("PUT", "/v1/bot/crm/deals/"+deal["uuid"].(string), map[string]any{"status": "won"})
	if deals := c.call("GET", "/v1/bot/crm/deals", nil, "project_id", p, "bot_id", botID, "status", "won"); deals["total"] != float64(1) {
		t.Fatalf("deals %v", deals)
	}
	// fetchPipelineBoard, without a pipeline_id: the default pipeline's board.
	board := c.call("GET", "/v1/bot/crm/pipelines/board", nil, "project_id", p, "bot_id", botID)
	if won := board["stages"].([]any)[4].(map[string]any); won["name"] != "Won" || won["deal_count"] != float64(1) ||
		won["value_by_currency"].(map[string]any)["USD"] != float64(1200) || won["deals"].([]any)[0].(map[string]any)["title"] != "Pilot" {
		t.Fatalf("board %v", board)
	}
	// Tasks: the deal's status (won) is still in the body, so createTask is given its own.
	task := c.call("POST", "/v1/bot/crm/tasks", map[string]any{"title": "Call Jane", "status": "open", "priority": "high"})["task"].(map[string]any)
	taskID := task["uuid"].(string)
	if task["status"] != "open" || task["priority"] != "high" {
		t.Fatalf("task %v", task)
	}
	if snoozed := c.call("POST", "/v1/bot/crm/tasks/"+taskID+"/snooze", nil)["task"].(map[string]any); snoozed["snoozed_until"] == nil {
		t.Fatalf("snoozed %v", snoozed)
	}
	if tasks := c.call("GET", "/v1/bot/crm/tasks", nil, "project_id", p, "bot_id", botID, "page", "1", "per_page", "10", "view", "snoozed"); tasks["total"] != float64(1) {
		t.Fatalf("tasks %v", tasks)
	}
	c.call("PUT", "/v1/bot/crm/tasks/"+taskID, map[string]any{"status": "done"})
	if tasks := c.call("GET", "/v1/bot/crm/tasks", nil, "project_id", p, "bot_id", botID, "page", "1", "per_page", "10", "status", "done"); tasks["total"] != float64(1) ||
		tasks["tasks"].([]any)[0].(map[string]any)["title"] != "Call Jane" {
		t.Fatalf("tasks done %v", tasks)
	}
	c.call("DELETE", "/v1/bot/crm/tasks/"+taskID, nil, "project_id", p, "bot_id", botID)

	field := c.call("POST", "/v1/bot/crm/fields", map[string]any{"label": "Company Size", "field_type": "select", "options": []any{"1-10", "11-50"}})["field"].(map[string]any)
	fieldID := field["uuid"].(string)
	if renamed := c.call("PUT", "/v1/bot/crm/fields/"+fieldID, map[string]any{"label": "Headcount"}); renamed["field"].(map[string]any)["key"] != "company_size" {
		t.Fatalf("field renamed %v", renamed)
	}
	if fields := c.call("GET", "/v1/bot/crm/fields", nil, "project_id", p, "bot_id", botID); fields["total"] != float64(1) {
		t.Fatalf("fields %v", fields)
	}
	statuses := c.call("GET", "/v1/bot/crm/contacts/statuses", nil, "project_id", p, "bot_id", botID)["statuses"].([]any)
	qualified := statuses[2].(map[string]any)
	// The deal's status (won) is still in the body: the contact's own status replaces it.
	contact := c.call("POST", "/v1/bot/crm/contacts", map[string]any{"email": "jane@example.com", "status": "customer",
		"fields": map[string]any{"company_size": "11-50", "first_name": "Jane"}})["contact"].(map[string]any)
	if contact["status"] != "customer" || contact["fields"].(map[string]any)["company_size"] != "11-50" {
		t.Fatalf("contact %v", contact)
	}
	contactID := contact["uuid"].(string)
	if updated := c.call("PUT", "/v1/bot/crm/contacts/"+contactID, map[string]any{"status_id": qualified["uuid"]})["contact"].(map[string]any); updated["status"] != "qualified" {
		t.Fatalf("contact updated %v", updated)
	}
	if deleted := c.call("DELETE", "/v1/bot/crm/fields/"+fieldID, nil, "project_id", p, "bot_id", botID); deleted["stored_values"] != float64(1) {
		t.Fatalf("field deleted %v", deleted)
	}
	// fetchCRMTemplates, applyCRMTemplate (with the README's name), fetchCRMSetup, fetchCRMReport.
	if templates := c.call("GET", "/v1/bot/crm/templates", nil, "project_id", p, "bot_id", botID); templates["total"] != float64(4) {
		t.Fatalf("templates %v", templates)
	}
	applied := c.call("POST", "/v1/bot/crm/templates/apply", map[string]any{"template_key": "sales", "name": "Q3 Pipeline"})["applied"].(map[string]any)
	if applied["pipeline"].(map[string]any)["name"] != "Q3 Pipeline" || applied["created"].(map[string]any)["pipelines"] != float64(1) {
		t.Fatalf("template applied %v", applied)
	}
	crmSetup := c.call("GET", "/v1/bot/crm/setup", nil, "project_id", p, "bot_id", botID)["setup"].(map[string]any)
	if counts := crmSetup["counts"].(map[string]any); counts["won_deals"] != float64(1) || counts["contacts"] != float64(1) || counts["pipelines"] != float64(2) {
		t.Fatalf("setup %v", crmSetup)
	}
	if report := c.call("GET", "/v1/bot/crm/report", nil, "project_id", p, "bot_id", botID)["report"].(map[string]any); report["deals"].(map[string]any)["won"] != float64(1) {
		t.Fatalf("report %v", report)
	}

	wf := c.call("POST", "/v1/bot/workflow/create", map[string]any{"name": "Note wins", "trigger_type": "event", "trigger_event": "deal.won",
		"conditions": nil, "actions": []any{map[string]any{"type": "send_message", "params": map[string]any{"message": "Won: {{data.title}}"}}}})["workflow"].(map[string]any)
	wfID := wf["uuid"].(string)
	c.call("GET", "/v1/bot/workflow/read", nil, "project_id", p, "bot_id", botID, "workflow_id", wfID)
	run := c.call("POST", "/v1/bot/workflow/run", map[string]any{"workflow_id": wfID, "input": nil})["run"].(map[string]any)
	if run["status"] != "queued" {
		t.Fatalf("run %v", run)
	}
	c.call("GET", "/v1/bot/workflow/logs", nil, "project_id", p, "bot_id", botID, "workflow_id", wfID)
	c.call("GET", "/v1/bot/workflow/catalog", nil, "project_id", p, "bot_id", botID)
	if flows := c.call("GET", "/v1/bot/workflow/readall", nil, "project_id", p, "bot_id", botID); flows["total"] != float64(1) {
		t.Fatalf("workflows %v", flows)
	}

	beat := c.call("POST", "/v1/bot/heartbeat/configure", map[string]any{"heartbeat_id": nil, "prompt": "Summarise the week's deals",
		"cron_pattern": "0 9 * * 1", "timezone": "Europe/Paris", "enabled": nil, "credit_budget": "50", "max_consecutive_errors": nil,
		"member_id": nil, "chat_mode": nil})["heartbeat"].(map[string]any)
	beatID := beat["uuid"].(string)
	c.body["heartbeat_id"] = beatID
	if got := c.call("GET", "/v1/bot/heartbeat/read", nil, "project_id", p, "bot_id", botID, "heartbeat_id", beatID)["heartbeat"].(map[string]any); got["credit_budget"] != float64(50) {
		t.Fatalf("heartbeat %v", got)
	}
	c.call("POST", "/v1/bot/heartbeat/disable", nil)
	c.call("POST", "/v1/bot/heartbeat/enable", nil)
	firing := c.call("POST", "/v1/bot/heartbeat/trigger", nil)["firing_id"].(string)
	for deadline := time.Now().Add(30 * time.Second); ; waitABit() {
		logs := c.call("GET", "/v1/bot/heartbeat/logs", nil, "project_id", p, "bot_id", botID, "heartbeat_id", beatID)["logs"].([]any)
		if len(logs) == 1 && logs[0].(map[string]any)["firing_id"] == firing && logs[0].(map[string]any)["status"] == "succeeded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the triggered firing did not succeed: %v", logs)
		}
	}
	c.call("GET", "/v1/bot/heartbeat/stats", nil, "project_id", p, "bot_id", botID)
	if beats := c.call("GET", "/v1/bot/heartbeat/readall", nil, "project_id", p, "bot_id", botID); beats["total"] != float64(1) {
		t.Fatalf("heartbeats %v", beats)
	}
	c.call("DELETE", "/v1/bot/heartbeat/delete", nil, "project_id", p, "bot_id", botID, "heartbeat_id", beatID)

	c.call("DELETE", "/v1/bot/workflow/delete", nil, "project_id", p, "bot_id", botID, "workflow_id", wfID)
	c.call("DELETE", "/v1/bot/crm/deals/"+deal["uuid"].(string), nil, "project_id", p, "bot_id", botID)
	c.call("DELETE", "/v1/bot/chat/delete", nil, "project_id", p, "bot_id", botID, "chat_id", chatID)
	c.call("DELETE", "/v1/bot/source/delete", nil, "project_id", p, "bot_id", botID, "source_id", src["id"].(string))
	c.call("POST", "/v1/bot/reset", nil)
	if bots := c.call("GET", "/v1/bot/readall", nil, "project_id", p); bots["total"] != float64(1) || bots["bots"] == nil {
		t.Fatalf("bots %v", bots)
	}
	c.call("DELETE", "/v1/bot/delete", nil, "project_id", p, "bot_id", botID)
}

// BoostGPT's client's workspace calls, in a session with its one mutated body: each answered in
// the shape it reads (an object with no error.status >= 400), and the stale fields it keeps
// sending (a previous call's file_path, content, name) ignored where they do not belong.
func TestBoostGPTClientWorkspaces(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := &boostClient{t: t, b: b, body: map[string]any{"project_id": b.project.ID}}
	p := b.project.ID
	botID := c.call("POST", "/v1/bot/create", map[string]any{"name": "Builder", "model": "gpt-4o-mini"})["bot"].(map[string]any)["uuid"].(string)

	// fetchWorkspaces, createWorkspace
	if list := c.call("GET", "/v1/bot/workspace/readall", nil, "project_id", p, "bot_id", botID); list["total"] != float64(0) {
		t.Fatalf("workspaces %v", list)
	}
	ws := c.call("POST", "/v1/bot/workspace/create", map[string]any{"bot_id": botID, "name": "My Workspace"})["workspace"].(map[string]any)
	wsID := ws["uuid"].(string)
	if ws["name"] != "My Workspace" || ws["file_count"] != float64(0) {
		t.Fatalf("workspace %v", ws)
	}
	// createFile, as the client's README writes it.
	file := c.call("POST", "/v1/bot/workspace/file", map[string]any{"workspace_uuid": wsID, "file_path": "/src/app.js",
		"content": `console.log("hello");`, "language": "javascript"})["file"].(map[string]any)
	fileID := file["uuid"].(string)
	if file["file_path"] != "src/app.js" || file["language"] != "javascript" || file["version"] != float64(1) {
		t.Fatalf("file %v", file)
	}
	// fetchFiles, readFile
	if files := c.call("GET", "/v1/bot/workspace/files", nil, "project_id", p, "bot_id", botID, "workspace_uuid", wsID)["files"].([]any); len(files) != 1 ||
		files[0].(map[string]any)["uuid"] != fileID {
		t.Fatalf("files %v", files)
	}
	// updateFile: the body still carries the creation's file_path; file_uuid names the file.
	c.call("PUT", "/v1/bot/workspace/file", map[string]any{"file_uuid": fileID, "content": "// updated content"})
	read := c.call("GET", "/v1/bot/workspace/file", nil, "project_id", p, "bot_id", botID, "workspace_uuid", wsID, "file_uuid", fileID)["file"].(map[string]any)
	if read["content"] != "// updated content" || len(read["versions"].([]any)) != 1 {
		t.Fatalf("read %v", read)
	}
	// renameFile, then a second file (the body still names the first's uuid and the update's
	// content, which a creation takes as given).
	if moved := c.call("PUT", "/v1/bot/workspace/file/rename", map[string]any{"old_path": "/src/app.js", "new_path": "/src/main.js"})["file"].(map[string]any); moved["file_path"] != "src/main.js" {
		t.Fatalf("renamed %v", moved)
	}
	c.call("POST", "/v1/bot/workspace/file", map[string]any{"file_path": "index.html", "content": "<script src=src/main.js></script>"})

	// downloadWorkspace: a zip. (The client parses every answer as JSON, so its call reports a
	// parse error for any archive; the archive is checked here as a browser or curl takes it.)
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workspace/download?project_id=" + p + "&bot_id=" + botID + "&workspace_uuid=" + wsID, Key: b.key})
	z, err := zip.NewReader(bytes.NewReader(res.Body), int64(len(res.Body)))
	if res.Status != http.StatusOK || err != nil || len(z.File) != 2 || z.File[0].Name != "index.html" || z.File[1].Name != "src/main.js" {
		t.Fatalf("download: %d %v", res.Status, err)
	}

	// suggestSubdomain, publishWorkspace (the body still carries the earlier calls' fields),
	// the site, unpublishWorkspace.
	sub := c.call("GET", "/v1/bot/workspace/suggest-subdomain", nil, "project_id", p, "bot_id", botID, "workspace_uuid", wsID)["subdomain"].(string)
	if sub != "my-workspace" {
		t.Fatalf("suggested %q", sub)
	}
	if pub := c.call("PUT", "/v1/bot/workspace/publish", map[string]any{"bot_id": botID, "workspace_uuid": wsID, "subdomain": sub}); pub["published"] != true ||
		pub["url"] != "https://my-workspace."+testPublicDomain+"/" || pub["workspace"].(map[string]any)["subdomain"] != sub {
		t.Fatalf("published %v", pub)
	}
	if res, body := b.siteGet(t, "", "/w/"+sub+"/src/main.js"); res.StatusCode != http.StatusOK || body != "// updated content" {
		t.Fatalf("site: %d %q", res.StatusCode, body)
	}
	// addCustomDomain, getDomainInfo, refreshDomainStatus (once the records are there), the site at
	// the domain, removeCustomDomain.
	added := c.call("POST", "/v1/bot/workspace/domain/add", map[string]any{"bot_id": botID, "workspace_uuid": wsID, "custom_domain": "app.example.test"})
	if added["custom_domain"] != "app.example.test" || added["status"] != "pending" {
		t.Fatalf("domain added %v", added)
	}
	info := c.call("GET", "/v1/bot/workspace/domain/info", nil, "project_id", p, "bot_id", botID, "workspace_uuid", wsID)
	for _, r := range info["records"].([]any) {
		rec := r.(map[string]any)
		if rec["type"] == "TXT" {
			b.dns.SetTXT(rec["name"].(string), rec["value"].(string))
		} else {
			b.dns.SetCNAME(rec["name"].(string), rec["value"].(string))
		}
	}
	if st := c.call("GET", "/v1/bot/workspace/domain/status", nil, "project_id", p, "bot_id", botID, "workspace_uuid", wsID); st["status"] != "active" ||
		st["url"] != "https://app.example.test/" {
		t.Fatalf("domain status %v", st)
	}
	if res, body := b.siteGet(t, "app.example.test", "/src/main.js"); res.StatusCode != http.StatusOK || body != "// updated content" {
		t.Fatalf("site at the domain: %d %q", res.StatusCode, body)
	}
	if removed := c.call("DELETE", "/v1/bot/workspace/domain/remove", nil, "project_id", p, "bot_id", botID, "workspace_uuid", wsID); removed["custom_domain"] != nil {
		t.Fatalf("domain removed %v", removed)
	}
	if un := c.call("PUT", "/v1/bot/workspace/unpublish", map[string]any{"bot_id": botID, "workspace_uuid": wsID}); un["published"] != false {
		t.Fatalf("unpublished %v", un)
	}
	if res, _ := b.siteGet(t, "", "/w/"+sub+"/src/main.js"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("site after unpublish: %d", res.StatusCode)
	}

	// deleteFile, deleteWorkspace
	c.call("DELETE", "/v1/bot/workspace/file", nil, "project_id", p, "bot_id", botID, "workspace_uuid", wsID, "file_uuid", fileID)
	c.call("DELETE", "/v1/bot/workspace/delete", nil, "project_id", p, "bot_id", botID, "workspace_uuid", wsID)
	if list := c.call("GET", "/v1/bot/workspace/readall", nil, "project_id", p, "bot_id", botID); list["total"] != float64(0) {
		t.Fatalf("workspaces after the delete %v", list)
	}
}
