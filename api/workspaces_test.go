package api_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/workspaces"
)

// wsClient calls the workspace routes of one workspace of a new agent.
type wsClient struct {
	t              *testing.T
	b              *bundle
	bot, workspace string
}

func newWorkspace(t *testing.T, b *bundle, name string) *wsClient {
	t.Helper()
	w := &wsClient{t: t, b: b, bot: b.createBot(t, nil)["uuid"].(string)}
	w.workspace = w.ok("POST", "/v1/bot/workspace/create", map[string]any{"name": name})["workspace"].(map[string]any)["uuid"].(string)
	return w
}

// do sends body (POST, PUT) or query (GET, DELETE) with the agent and the workspace.
func (w *wsClient) do(method, path string, args map[string]any) *apitest.Response {
	w.t.Helper()
	all := map[string]any{"project_id": w.b.project.ID, "bot_id": w.bot, "workspace_uuid": w.workspace}
	for k, v := range args {
		all[k] = v
	}
	req := apitest.Request{Method: method, Path: path, Key: w.b.key}
	if method == http.MethodGet || method == http.MethodDelete {
		q := url.Values{}
		for k, v := range all {
			q.Set(k, fmt.Sprint(v))
		}
		req.Path += "?" + q.Encode()
	} else {
		req.Body = all
	}
	return w.b.client.Do(req)
}

// ok is do, which must answer 200.
func (w *wsClient) ok(method, path string, args map[string]any) map[string]any {
	w.t.Helper()
	res := w.do(method, path, args)
	expect(w.t, res, http.StatusOK, "")
	return res.JSON(w.t)
}

// create makes a file and returns it.
func (w *wsClient) create(p, content string) map[string]any {
	w.t.Helper()
	return w.ok("POST", "/v1/bot/workspace/file", map[string]any{"file_path": p, "content": content})["file"].(map[string]any)
}

// paths are the workspace's files' paths, in order.
func (w *wsClient) paths() []string {
	w.t.Helper()
	var out []string
	for _, f := range w.ok("GET", "/v1/bot/workspace/files", nil)["files"].([]any) {
		out = append(out, f.(map[string]any)["file_path"].(string))
	}
	return out
}

// unzip downloads the workspace and returns its files by name.
func (w *wsClient) unzip() map[string]string {
	w.t.Helper()
	res := w.do("GET", "/v1/bot/workspace/download", nil)
	expect(w.t, res, http.StatusOK, "")
	if ct := res.Header.Get("Content-Type"); ct != "application/zip" {
		w.t.Fatalf("download's Content-Type %q", ct)
	}
	z, err := zip.NewReader(bytes.NewReader(res.Body), int64(len(res.Body)))
	if err != nil {
		w.t.Fatalf("the download is not a zip: %v", err)
	}
	out := map[string]string{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			w.t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			w.t.Fatal(err)
		}
		out[f.Name] = string(b)
	}
	return out
}

// A file's life: created, read, changed (each change kept as a version, readable and
// restorable), renamed, listed, downloaded, deleted.
func TestWorkspaceFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "Site")

	f := w.create("/index.html", "<h1>One</h1>")
	id := f["uuid"].(string)
	if f["file_path"] != "index.html" || f["version"] != float64(1) || f["language"] != "html" || f["size"] != float64(12) ||
		f["content_type"] != "text/html; charset=utf-8" || f["encoding"] != "utf-8" {
		t.Fatalf("created %v", f)
	}
	w.ok("PUT", "/v1/bot/workspace/file", map[string]any{"file_uuid": id, "content": "<h1>Two</h1>"})
	got := w.ok("PUT", "/v1/bot/workspace/file", map[string]any{"file_path": "index.html", "content": "<h1>Three</h1>"})["file"].(map[string]any)
	if got["version"] != float64(3) || got["content"] != "<h1>Three</h1>" {
		t.Fatalf("updated %v", got)
	}
	read := w.ok("GET", "/v1/bot/workspace/file", map[string]any{"file_uuid": id})["file"].(map[string]any)
	versions := read["versions"].([]any)
	if len(versions) != 2 || versions[0].(map[string]any)["version"] != float64(2) || versions[1].(map[string]any)["version"] != float64(1) {
		t.Fatalf("versions %v", versions)
	}
	if v1 := w.ok("GET", "/v1/bot/workspace/file", map[string]any{"file_uuid": id, "version": 1})["file"].(map[string]any); v1["content"] != "<h1>One</h1>" {
		t.Fatalf("version 1 reads %v", v1["content"])
	}
	// Undo: back to version 1, itself a change (version 4) that keeps version 3.
	restored := w.ok("POST", "/v1/bot/workspace/file/restore", map[string]any{"file_uuid": id, "version": "1"})["file"].(map[string]any)
	if restored["content"] != "<h1>One</h1>" || restored["version"] != float64(4) || restored["versions"].([]any)[0].(map[string]any)["version"] != float64(3) {
		t.Fatalf("restored %v", restored)
	}
	expect(t, w.do("POST", "/v1/bot/workspace/file/restore", map[string]any{"file_uuid": id, "version": 99}), http.StatusNotFound, "workspace_file_version_not_found")

	w.create("style.css", "h1{color:red}")
	expect(t, w.do("POST", "/v1/bot/workspace/file", map[string]any{"file_path": "style.css", "content": ""}), http.StatusConflict, "workspace_file_exists")
	renamed := w.ok("PUT", "/v1/bot/workspace/file/rename", map[string]any{"old_path": "/index.html", "new_path": "pages/home.html"})["file"].(map[string]any)
	if renamed["file_path"] != "pages/home.html" || renamed["uuid"] != id {
		t.Fatalf("renamed %v", renamed)
	}
	expect(t, w.do("PUT", "/v1/bot/workspace/file/rename", map[string]any{"old_path": "style.css", "new_path": "pages/home.html"}),
		http.StatusConflict, "workspace_file_exists")
	expect(t, w.do("PUT", "/v1/bot/workspace/file/rename", map[string]any{"old_path": "index.html", "new_path": "x.html"}),
		http.StatusNotFound, "workspace_file_not_found")
	if got := w.paths(); strings.Join(got, ",") != "pages/home.html,style.css" {
		t.Fatalf("files %v", got)
	}
	ws := w.ok("GET", "/v1/bot/workspace/files", nil)["workspace"].(map[string]any)
	if ws["file_count"] != float64(2) || ws["total_bytes"] != float64(len("<h1>One</h1>")+len("h1{color:red}")) {
		t.Fatalf("workspace %v", ws)
	}
	if files := w.unzip(); len(files) != 2 || files["pages/home.html"] != "<h1>One</h1>" || files["style.css"] != "h1{color:red}" {
		t.Fatalf("zip %v", files)
	}

	w.ok("DELETE", "/v1/bot/workspace/file", map[string]any{"file_uuid": id})
	expect(t, w.do("GET", "/v1/bot/workspace/file", map[string]any{"file_uuid": id}), http.StatusNotFound, "workspace_file_not_found")
	if ws := w.ok("GET", "/v1/bot/workspace/files", nil)["workspace"].(map[string]any); ws["file_count"] != float64(1) || ws["total_bytes"] != float64(13) {
		t.Fatalf("after the delete %v", ws)
	}
	if list := w.ok("GET", "/v1/bot/workspace/readall", nil); list["total"] != float64(1) {
		t.Fatalf("workspaces %v", list)
	}
	w.ok("DELETE", "/v1/bot/workspace/delete", nil)
	expect(t, w.do("GET", "/v1/bot/workspace/files", nil), http.StatusNotFound, "workspace_not_found")
}

// Hostile paths are refused with a 422 naming the field, or land inside the workspace: never
// outside it, and never as a second spelling of a file.
func TestWorkspaceHostilePaths(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "Hostile")
	for _, c := range []struct{ name, path, lands string }{
		{"parent", "../x.html", ""},
		{"parent inside", "a/../../x.html", ""},
		{"percent-encoded parent", "%2e%2e/x.html", ""},
		{"percent-encoded slash", "..%2fx.html", ""},
		{"backslash parent", `..\x.html`, ""},
		{"absolute system file", "/etc/passwd", ""},
		{"NUL", "a\x00b.html", ""},
		{"newline", "a\nb.html", ""},
		{"right-to-left override", "photo\u202egnp.html", ""},
		{"2,000 characters", strings.Repeat("a", 1995) + ".html", ""},
		{"folder", "assets/", ""},
		{"executable", "run.sh", ""},
		{"absolute text file", "/etc/passwd.txt", "etc/passwd.txt"},
		{"doubled slashes", "//x//y.txt", "x/y.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := w.do("POST", "/v1/bot/workspace/file", map[string]any{"file_path": c.path, "content": "hostile"})
			if c.lands == "" {
				expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
				expectField(t, res, "file_path")
				expect(t, w.do("PUT", "/v1/bot/workspace/file/rename", map[string]any{"old_path": "x/y.txt", "new_path": c.path}),
					http.StatusUnprocessableEntity, "invalid_field")
				return
			}
			expect(t, res, http.StatusOK, "")
			if got := res.JSON(t)["file"].(map[string]any)["file_path"]; got != c.lands {
				t.Fatalf("stored at %v, want %s", got, c.lands)
			}
		})
	}
	// Two spellings of one name (NFD, then NFC) are one file.
	nfd := w.create("cafe\u0301.html", "decomposed")
	if nfd["file_path"] != "caf\u00e9.html" {
		t.Fatalf("stored at %q", nfd["file_path"])
	}
	expect(t, w.do("POST", "/v1/bot/workspace/file", map[string]any{"file_path": "caf\u00e9.html", "content": "composed"}), http.StatusConflict, "workspace_file_exists")
	w.ok("PUT", "/v1/bot/workspace/file", map[string]any{"file_path": "caf\u00e9.html", "content": "composed"})
	if got := w.paths(); strings.Join(got, "|") != "caf\u00e9.html|etc/passwd.txt|x/y.txt" {
		t.Fatalf("files %q", got)
	}
	for name := range w.unzip() {
		if strings.HasPrefix(name, "/") || strings.Contains(name, "..") || strings.Contains(name, `\`) {
			t.Errorf("the zip has %q", name)
		}
	}
}

// A 1x1 PNG.
const pixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// Contents must be what the file type says, and the limits of a file and of a workspace are
// 4xx errors that say which.
func TestWorkspaceLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "Limits")
	png := w.create("img/pixel.png", pixelPNG)
	if png["encoding"] != "base64" || png["content_type"] != "image/png" {
		t.Fatalf("png %v", png)
	}
	raw, _ := base64.StdEncoding.DecodeString(pixelPNG)
	if png["size"] != float64(len(raw)) || w.unzip()["img/pixel.png"] != string(raw) {
		t.Fatal("the png's bytes are not what was sent")
	}
	for _, c := range []struct{ name, path, content string }{
		{"page as an image", "evil.png", base64.StdEncoding.EncodeToString([]byte("<html><script>alert(1)</script>"))},
		{"image not base64", "bad.png", "not base64!"},
		{"NUL in text", "a.txt", "a\x00b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := w.do("POST", "/v1/bot/workspace/file", map[string]any{"file_path": c.path, "content": c.content})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, "content")
		})
	}
	expect(t, w.do("PUT", "/v1/bot/workspace/file/rename", map[string]any{"old_path": "img/pixel.png", "new_path": "pixel.html"}),
		http.StatusUnprocessableEntity, "invalid_field")

	half := strings.Repeat("a", 512<<10)
	expect(t, w.do("POST", "/v1/bot/workspace/file", map[string]any{"file_path": "big.txt", "content": half + "a"}),
		http.StatusRequestEntityTooLarge, "workspace_file_too_large")
	// 10 MiB: the pixel, a small file and 19 of 512 KiB fit; a 20th does not, nor does the small
	// one grown to 512 KiB; shrinking one makes room again.
	w.create("small.txt", "small")
	for i := range 19 {
		w.create(fmt.Sprintf("big%02d.txt", i), half)
	}
	expect(t, w.do("POST", "/v1/bot/workspace/file", map[string]any{"file_path": "big19.txt", "content": half}),
		http.StatusRequestEntityTooLarge, "workspace_full")
	expect(t, w.do("PUT", "/v1/bot/workspace/file", map[string]any{"file_path": "small.txt", "content": half}),
		http.StatusRequestEntityTooLarge, "workspace_full")
	shrunk := w.ok("PUT", "/v1/bot/workspace/file", map[string]any{"file_path": "big00.txt", "content": "small"})["file"].(map[string]any)
	if ws := w.ok("GET", "/v1/bot/workspace/files", nil)["workspace"].(map[string]any); ws["total_bytes"] != float64(18*(512<<10)+len(raw)+10) ||
		ws["file_count"] != float64(21) || shrunk["versions"].([]any)[0].(map[string]any)["size"] != float64(512<<10) {
		t.Fatalf("workspace %v", ws)
	}
	w.create("big19.txt", half)
	// A deleted file's room taken by another, it no longer fits: undeleting it is refused.
	big01 := w.fileAt("big01.txt")["uuid"]
	w.ok("DELETE", "/v1/bot/workspace/file", map[string]any{"file_uuid": big01})
	w.create("big20.txt", half)
	expect(t, w.do("POST", "/v1/bot/workspace/file/undelete", map[string]any{"file_uuid": big01}), http.StatusRequestEntityTooLarge, "workspace_full")

	// 200 files.
	w2 := &wsClient{t: t, b: b, bot: w.bot}
	w2.workspace = w.ok("POST", "/v1/bot/workspace/create", map[string]any{"name": "Many"})["workspace"].(map[string]any)["uuid"].(string)
	for i := range 200 {
		w2.create(fmt.Sprintf("n/%03d.txt", i), "x")
	}
	expect(t, w2.do("POST", "/v1/bot/workspace/file", map[string]any{"file_path": "n/200.txt", "content": "x"}), http.StatusConflict, "workspace_file_limit")
	if n := len(w2.paths()); n != 200 {
		t.Fatalf("%d files", n)
	}
}

// trash is a page of the workspace's deleted files.
func (w *wsClient) trash(args map[string]any) (int, []map[string]any) {
	w.t.Helper()
	res := w.ok("GET", "/v1/bot/workspace/trash", args)
	var files []map[string]any
	for _, f := range res["files"].([]any) {
		files = append(files, f.(map[string]any))
	}
	return int(res["total"].(float64)), files
}

// A workspace's trash keeps the last workspaces.MaxTrash deleted files: a delete past them drops
// the oldest, which can no longer be undeleted.
func TestWorkspaceTrashKeepsTheLastDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "Bounded trash")
	var ids []string
	for i := range workspaces.MaxTrash + 2 {
		id := w.create(fmt.Sprintf("page%02d.html", i), "<p>x</p>")["uuid"].(string)
		w.ok("DELETE", "/v1/bot/workspace/file", map[string]any{"file_uuid": id})
		ids = append(ids, id)
	}
	total, newest := w.trash(map[string]any{"per_page": 1})
	if total != workspaces.MaxTrash || newest[0]["uuid"] != ids[len(ids)-1] {
		t.Fatalf("trash of %d files after %d deletes, newest %v", total, len(ids), newest)
	}
	for _, gone := range ids[:2] {
		expect(t, w.do("POST", "/v1/bot/workspace/file/undelete", map[string]any{"file_uuid": gone}), http.StatusNotFound, "workspace_deleted_file_not_found")
	}
	w.ok("POST", "/v1/bot/workspace/file/undelete", map[string]any{"file_uuid": ids[2]})
}

// A deleted file goes to the workspace's trash with its versions, its path free at once, out of
// the listing, the zip and the quota; undeleting it brings it back as it was, unless its path
// was taken in between; another workspace's deleted files are not its own.
func TestWorkspaceTrash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "Trash")
	id := w.create("index.html", "<h1>One</h1>")["uuid"].(string)
	w.ok("PUT", "/v1/bot/workspace/file", map[string]any{"file_uuid": id, "content": "<h1>Two</h1>"})
	w.create("style.css", "h1{}")

	w.ok("DELETE", "/v1/bot/workspace/file", map[string]any{"file_uuid": id})
	if got := strings.Join(w.paths(), ","); got != "style.css" {
		t.Fatalf("files after the delete %s", got)
	}
	if files := w.unzip(); len(files) != 1 {
		t.Fatalf("zip after the delete %v", files)
	}
	if ws := w.ok("GET", "/v1/bot/workspace/files", nil)["workspace"].(map[string]any); ws["file_count"] != float64(1) || ws["total_bytes"] != float64(4) {
		t.Fatalf("quota after the delete %v", ws)
	}
	total, trashed := w.trash(nil)
	if total != 1 || len(trashed) != 1 || trashed[0]["uuid"] != id || trashed[0]["file_path"] != "index.html" || trashed[0]["version"] != float64(2) ||
		trashed[0]["deleted_by"] != "api" || trashed[0]["deleted_at"] == nil || trashed[0]["content"] != nil {
		t.Fatalf("trash %d %v", total, trashed)
	}

	// Another workspace's trash is not this one's: neither listed nor undeleted through it.
	other := newWorkspace(t, b, "Other")
	theirs := other.create("index.html", "<p>Theirs</p>")["uuid"].(string)
	other.ok("DELETE", "/v1/bot/workspace/file", map[string]any{"file_uuid": theirs})
	expect(t, w.do("POST", "/v1/bot/workspace/file/undelete", map[string]any{"file_uuid": theirs}), http.StatusNotFound, "workspace_deleted_file_not_found")
	if total, _ := other.trash(nil); total != 1 {
		t.Fatalf("the other workspace's trash holds %d files", total)
	}

	// The path is free at once; while a file has it, the deleted one cannot come back.
	taken := w.create("index.html", "<p>New</p>")["uuid"].(string)
	expect(t, w.do("POST", "/v1/bot/workspace/file/undelete", map[string]any{"file_uuid": id}), http.StatusConflict, "workspace_file_exists")
	w.ok("DELETE", "/v1/bot/workspace/file", map[string]any{"file_uuid": taken})
	if total, page := w.trash(map[string]any{"per_page": 1, "page": 1}); total != 2 || len(page) != 1 || page[0]["uuid"] != taken {
		t.Fatalf("trash's first page %d %v", total, page)
	}

	back := w.ok("POST", "/v1/bot/workspace/file/undelete", map[string]any{"file_uuid": id})["file"].(map[string]any)
	versions, _ := back["versions"].([]any)
	if back["uuid"] != id || back["file_path"] != "index.html" || back["content"] != "<h1>Two</h1>" || back["version"] != float64(2) || len(versions) != 1 {
		t.Fatalf("undeleted %v", back)
	}
	if v1 := w.ok("GET", "/v1/bot/workspace/file", map[string]any{"file_uuid": id, "version": 1})["file"].(map[string]any); v1["content"] != "<h1>One</h1>" {
		t.Fatalf("version 1 after the undelete reads %v", v1["content"])
	}
	if files := w.unzip(); files["index.html"] != "<h1>Two</h1>" || len(files) != 2 {
		t.Fatalf("zip after the undelete %v", files)
	}
	if ws := w.ok("GET", "/v1/bot/workspace/files", nil)["workspace"].(map[string]any); ws["file_count"] != float64(2) || ws["total_bytes"] != float64(4+12) {
		t.Fatalf("quota after the undelete %v", ws)
	}
	if total, left := w.trash(nil); total != 1 || left[0]["uuid"] != taken {
		t.Fatalf("trash after the undelete %d %v", total, left)
	}
	expect(t, w.do("POST", "/v1/bot/workspace/file/undelete", map[string]any{"file_uuid": id}), http.StatusNotFound, "workspace_deleted_file_not_found")
	expect(t, w.do("POST", "/v1/bot/workspace/file/undelete", nil), http.StatusUnprocessableEntity, "invalid_field")

}

// Deleting a workspace drops its trash.
func TestWorkspaceDeleteDropsTrash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "Dropped")
	id := w.create("index.html", "<p>Gone</p>")["uuid"].(string)
	w.ok("DELETE", "/v1/bot/workspace/file", map[string]any{"file_uuid": id})
	if total, _ := w.trash(nil); total != 1 {
		t.Fatalf("trash holds %d files", total)
	}
	w.ok("DELETE", "/v1/bot/workspace/delete", nil)
	n, err := b.db.Collection("workspace_trash").CountDocuments(context.Background(), bson.D{{Key: "uuid", Value: id}})
	if err != nil || n != 0 {
		t.Fatalf("the deleted workspace's trash keeps %d files (%v)", n, err)
	}
}
