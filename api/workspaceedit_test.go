package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// agentWorkspace is a workspace of the test's agent a, over HTTP.
func agentWorkspace(t *testing.T, b *bundle, a chatAPI, name string) *wsClient {
	t.Helper()
	w := &wsClient{t: t, b: b, bot: a.botID}
	w.workspace = w.ok("POST", "/v1/bot/workspace/create", map[string]any{"name": name})["workspace"].(map[string]any)["uuid"].(string)
	return w
}

// file reads the workspace's file at p (its uuid found in the listing), with its versions.
func (w *wsClient) fileAt(p string) map[string]any {
	w.t.Helper()
	for _, f := range w.ok("GET", "/v1/bot/workspace/files", nil)["files"].([]any) {
		if f := f.(map[string]any); f["file_path"] == p {
			return w.ok("GET", "/v1/bot/workspace/file", map[string]any{"file_uuid": f["uuid"]})["file"].(map[string]any)
		}
	}
	return nil
}

// In chat_mode edit, a chat that names a workspace of its agent is answered by a run with the
// file tools: its changes are the workspace's, made by the run, kept as versions and undone by a
// restore; paths outside the workspace and workspaces the model names are refused; later turns
// of the chat edit the workspace it named; a chat cannot name another agent's, project's or
// account's workspace; without a workspace, edit mode edits the message's text.
func TestWorkspaceEditMode(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"auto_approve_tools": 1})
	w := agentWorkspace(t, b, a, "Site")
	w.create("index.html", "<h1>Old</h1>")
	other := agentWorkspace(t, b, a, "Other site")
	other.create("index.html", "<h1>Theirs</h1>")

	t.Run("AskModeIgnoresTheWorkspace", func(t *testing.T) {
		// BoostGPT's client sends the workspace_uuid of its last workspace call with its chats.
		fake.Set(providertest.Behavior{Script: []providertest.Turn{{Reply: "Hello."}}})
		res, asked := a.chat(t, map[string]any{"message": "Hi", "workspace_uuid": "no-such-workspace"})
		if asked == nil || asked["reply"] != "Hello." || asked["executionId"] != "" {
			t.Fatalf("ask turn: %d %s", res.Status, res.Body)
		}
	})

	t.Run("WithoutAWorkspace", func(t *testing.T) {
		fake.Set(providertest.Behavior{Script: []providertest.Turn{{Reply: "Hello, world!"}}})
		res, edited := a.chat(t, map[string]any{"message": "Add a comma:\n```\nHello world!\n```", "chat_mode": "edit"})
		if edited == nil {
			t.Fatalf("text edit: %d %s", res.Status, res.Body)
		}
		if edited["reply"] != "Hello, world!" || edited["type"] != "edit" || edited["executionId"] != "" || !strings.Contains(edited["context"].(string), "+Hello, world!") {
			t.Fatalf("text edit %v", edited)
		}
	})

	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("list_files", `{}`),
		call("read_file", `{"file_path":"index.html"}`),
		call("write_file", `{"file_path":"/index.html","content":"<h1>New</h1>"}`),
		call("write_file", `{"file_path":"../x.html","content":"out"}`),
		call("write_file", fmt.Sprintf(`{"file_path":"index.html","content":"taken","workspace_uuid":%q}`, other.workspace)),
		call("write_file", `{"file_path":"about.html","content":"<p>About</p>"}`),
		{Reply: "Done."},
	}})
	res, chat := a.chat(t, map[string]any{"message": "Make the title New and add an about page", "chat_mode": "edit", "workspace_uuid": w.workspace})
	if chat == nil {
		t.Fatalf("chat: %d %s", res.Status, res.Body)
	}
	exec, _ := chat["executionId"].(string)
	cs := cycles(t, chat)
	if chat["reply"] != "Done." || exec == "" || len(cs) != 6 {
		t.Fatalf("reply %v", chat)
	}
	for i, want := range []struct {
		ok  bool
		obs string
	}{{true, "index.html"}, {true, "<h1>Old</h1>"}, {true, `"version":2`}, {false, "must not contain .."}, {false, "workspace_uuid"}, {true, "about.html"}} {
		if obs, _ := cs[i]["observation"].(string); cs[i]["actionSuccess"] != want.ok || !strings.Contains(obs, want.obs) {
			t.Errorf("cycle %d: want success %v and %q; got %v", i+1, want.ok, want.obs, cs[i])
		}
	}
	if got := strings.Join(w.paths(), ","); got != "about.html,index.html" {
		t.Errorf("files %s", got)
	}
	f := w.fileAt("index.html")
	versions := f["versions"].([]any)
	if f["content"] != "<h1>New</h1>" || f["version"] != float64(2) || f["changed_by"] != "agent" || f["run_id"] != exec ||
		len(versions) != 1 || versions[0].(map[string]any)["changed_by"] != "api" {
		t.Fatalf("file after the run %v", f)
	}
	if theirs := other.fileAt("index.html"); theirs["content"] != "<h1>Theirs</h1>" || len(other.paths()) != 1 {
		t.Errorf("the other workspace changed: %v %v", theirs, other.paths())
	}
	undone := w.ok("POST", "/v1/bot/workspace/file/restore", map[string]any{"file_uuid": f["uuid"], "version": 1})["file"].(map[string]any)
	if undone["content"] != "<h1>Old</h1>" || undone["version"] != float64(3) || undone["changed_by"] != "api" {
		t.Fatalf("restored %v", undone)
	}

	t.Run("LaterTurnsKeepTheWorkspace", func(t *testing.T) {
		chatID := chat["chat_id"].(string)
		mode := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/chat/mode", Key: b.key, Body: a.body(map[string]any{"chat_id": chatID, "mode": "edit"})})
		expect(t, mode, http.StatusOK, "")
		fake.Set(providertest.Behavior{Script: []providertest.Turn{call("rename_file", `{"old_path":"about.html","new_path":"pages/about.html"}`), {Reply: "Moved."}}})
		_, moved := a.chat(t, map[string]any{"message": "Move the about page under pages", "chat_id": chatID})
		if moved == nil || moved["reply"] != "Moved." || cycles(t, moved)[0]["actionSuccess"] != true {
			t.Fatalf("later turn %v", moved)
		}
		if got := strings.Join(w.paths(), ","); got != "index.html,pages/about.html" {
			t.Errorf("files %s", got)
		}
	})

	t.Run("RefusedWorkspaces", func(t *testing.T) {
		otherAgent := b.chatBot(t, nil)
		theirs := agentWorkspace(t, b, otherAgent, "Another agent's")
		otherKey, otherProject := b.newTenant(t)
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/create", Key: otherKey, Body: map[string]any{"project_id": otherProject.ID, "name": "other", "model": "gpt-4o-mini"}})
		expect(t, res, http.StatusOK, "")
		otherBot := res.JSON(t)["bot"].(map[string]any)["id"].(string)
		res = b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workspace/create", Key: otherKey,
			Body: map[string]any{"project_id": otherProject.ID, "bot_id": otherBot, "name": "Secret"}})
		expect(t, res, http.StatusOK, "")
		foreign := res.JSON(t)["workspace"].(map[string]any)["uuid"].(string)
		for name, id := range map[string]string{"AnotherAgent": theirs.workspace, "AnotherAccount": foreign, "Unknown": "no-such-workspace"} {
			t.Run(name, func(t *testing.T) {
				res, _ := a.chat(t, map[string]any{"message": "Edit it", "chat_mode": "edit", "workspace_uuid": id})
				expect(t, res, http.StatusNotFound, "workspace_not_found")
			})
		}
	})

}

// A run's writes, renames and deletes in a workspace wait for approval unless the agent
// auto-approves tools; reads do not. A run's delete is undone through the API.
func TestWorkspaceEditApproval(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	w := agentWorkspace(t, b, a, "Site")
	w.create("index.html", "<h1>Old</h1>")
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("read_file", `{"file_path":"index.html"}`),
		call("delete_file", `{"file_path":"index.html"}`),
		{Reply: "Deleted."},
	}})
	_, paused := a.chat(t, map[string]any{"message": "Delete the page", "chat_mode": "edit", "workspace_uuid": w.workspace})
	tool, _ := paused["tool"].(map[string]any)
	if paused == nil || paused["requiresApproval"] != true || tool["name"] != "delete_file" || len(cycles(t, paused)) != 1 {
		t.Fatalf("paused %v", paused)
	}
	if got := w.paths(); len(got) != 1 {
		t.Fatalf("deleted before the approval: %v", got)
	}
	_, done := a.executeTool(t, map[string]any{"executionId": paused["executionId"], "approve": true})
	if done == nil || done["reply"] != "Deleted." {
		t.Fatalf("after approval %v", done)
	}
	if got := w.paths(); len(got) != 0 {
		t.Fatalf("files after the approved delete: %v", got)
	}
	cs := cycles(t, done)
	if obs, _ := cs[len(cs)-1]["observation"].(string); !strings.Contains(obs, "restore") {
		t.Fatalf("the delete's observation does not say it can be restored: %v", cs[len(cs)-1])
	}
	_, trashed := w.trash(nil)
	if len(trashed) != 1 || trashed[0]["file_path"] != "index.html" || trashed[0]["deleted_by"] != "agent" || trashed[0]["deleted_run_id"] != paused["executionId"] {
		t.Fatalf("trash after the approved delete %v", trashed)
	}
	w.ok("POST", "/v1/bot/workspace/file/undelete", map[string]any{"file_uuid": trashed[0]["uuid"]})
	if f := w.fileAt("index.html"); f == nil || f["content"] != "<h1>Old</h1>" {
		t.Fatalf("undeleted %v", f)
	}
}
