package agentruns

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/workspaces"
)

// maxRead bounds the content read_file shows the model at once.
const maxRead = 64 << 10

// fileTools are the tools of a run that edits its chat's workspace (chat_mode edit): they name
// paths only, and act on the workspace of the run's scope through the workspace service, which
// confines the paths, holds the workspace to its limits and keeps every change as a version
// (made by the run: workspaces.ByRun) that the team can restore.
func (s Services) fileTools() []Tool {
	path := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return []Tool{
		{Name: "list_files", Description: "Lists the files of the workspace you are editing: their paths, sizes and versions.",
			Parameters: object(map[string]any{}), run: s.listFiles},
		{Name: "read_file", Description: "Reads a file of the workspace you are editing.",
			Parameters: object(map[string]any{"file_path": path("The file's path in the workspace, such as index.html or css/site.css.")}, "file_path"),
			run:        s.readFile},
		{Name: "write_file", Description: "Writes the whole content of a file of the workspace you are editing: creates it, or replaces its content (its previous content is kept as a version).", Changes: true,
			Parameters: object(map[string]any{"file_path": path("The file's path in the workspace."),
				"content":  map[string]any{"type": "string", "description": "The file's complete new content."},
				"language": map[string]any{"type": "string", "description": "The file's language, such as html (by its extension when absent)."}}, "file_path", "content"),
			run: s.writeFile},
		{Name: "rename_file", Description: "Moves a file of the workspace you are editing to another path.", Changes: true,
			Parameters: object(map[string]any{"old_path": path("The file's path now."), "new_path": path("Its new path.")}, "old_path", "new_path"),
			run:        s.renameFile},
		{Name: "delete_file", Description: "Deletes a file of the workspace you are editing (it is kept in the workspace's trash, from which the team can restore it).", Changes: true,
			Parameters: object(map[string]any{"file_path": path("The file's path in the workspace.")}, "file_path"),
			run:        s.deleteFile},
	}
}

// fileArgs are the arguments of the file tools.
type fileArgs struct {
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
	Language *string `json:"language"`
	OldPath  string  `json:"old_path"`
	NewPath  string  `json:"new_path"`
}

// fileCall reads a file tool's arguments and the workspace of the run's scope, as the agent's
// (one deleted since the turn began is not found).
func (s Services) fileCall(ctx context.Context, sc Scope, raw json.RawMessage) (workspaces.Workspace, fileArgs, error) {
	var a fileArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return workspaces.Workspace{}, a, apperr.Invalidf("arguments", "%v", err)
	}
	w, err := s.Workspaces.Get(ctx, sc.ProjectID, sc.BotID, sc.Workspace)
	return w, a, err
}

// summary is what the model sees of a file written.
func summary(f workspaces.File) map[string]any {
	return map[string]any{"file_path": f.Path, "size": f.Size, "version": f.Version, "language": f.Language}
}

func (s Services) listFiles(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	w, _, err := s.fileCall(ctx, sc, raw)
	if err != nil {
		return Result{}, err
	}
	files, err := s.Workspaces.Files(ctx, w)
	if err != nil {
		return Result{}, err
	}
	list := make([]map[string]any, len(files))
	for i, f := range files {
		list[i] = map[string]any{"file_path": f.Path, "size": f.Size, "version": f.Version, "language": f.Language}
	}
	return observe(map[string]any{"workspace": w.Name, "files": list}), nil
}

func (s Services) readFile(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	w, a, err := s.fileCall(ctx, sc, raw)
	if err != nil {
		return Result{}, err
	}
	f, err := s.Workspaces.FileAt(ctx, w, a.FilePath)
	if err != nil {
		return Result{}, err
	}
	if f.Encoding == workspaces.EncodingBase64 {
		return Result{Observation: fmt.Sprintf("%s is a %s file of %d bytes (not text).", f.Path, f.ContentType, f.Size)}, nil
	}
	content := f.Content
	if len(content) > maxRead {
		cut := strings.ToValidUTF8(content[:maxRead], "")
		content = cut + fmt.Sprintf("\n[… the file goes on: %d bytes of %d shown]", len(cut), len(f.Content))
	}
	return Result{Observation: fmt.Sprintf("%s (version %d):\n%s", f.Path, f.Version, content)}, nil
}

// writeFile creates the file at the path, or replaces its content: a retried call (the same
// content) changes nothing the second time.
func (s Services) writeFile(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	w, a, err := s.fileCall(ctx, sc, raw)
	if err != nil {
		return Result{}, err
	}
	by := workspaces.ByRun(sc.ExecutionID)
	f, err := s.Workspaces.FileAt(ctx, w, a.FilePath)
	switch {
	case apperr.As(err).Kind == apperr.NotFound:
		created, err := s.Workspaces.CreateFile(ctx, w, workspaces.FileInput{Path: &a.FilePath, Content: a.Content, Language: a.Language}, by)
		if err != nil {
			return Result{}, err
		}
		return observe(map[string]any{"created": summary(created)}), nil
	case err != nil:
		return Result{}, err
	}
	changed, err := s.Workspaces.UpdateFile(ctx, w, f.ID, workspaces.FileInput{Content: a.Content, Language: a.Language}, by)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"written": summary(changed)}), nil
}

func (s Services) renameFile(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	w, a, err := s.fileCall(ctx, sc, raw)
	if err != nil {
		return Result{}, err
	}
	f, err := s.Workspaces.RenameFile(ctx, w, a.OldPath, a.NewPath, workspaces.ByRun(sc.ExecutionID))
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"renamed": summary(f)}), nil
}

func (s Services) deleteFile(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	w, a, err := s.fileCall(ctx, sc, raw)
	if err != nil {
		return Result{}, err
	}
	f, err := s.Workspaces.FileAt(ctx, w, a.FilePath)
	if err != nil {
		return Result{}, err
	}
	if err := s.Workspaces.DeleteFile(ctx, w, f.ID, workspaces.ByRun(sc.ExecutionID)); err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"deleted": f.Path, "restorable": "The file is in the workspace's trash: the team can restore it with its versions (POST /v1/bot/workspace/file/undelete)."}), nil
}
