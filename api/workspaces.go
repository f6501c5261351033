package api

import (
	"cmp"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/workspaces"
)

// workspaceRequest is a body naming one workspace of the agent, and what the file calls send
// (BoostGPT's client sends one body for every call, so each reads only its own fields).
type workspaceRequest struct {
	scope
	WorkspaceUUID string      `json:"workspace_uuid"`
	Name          string      `json:"name"`
	FileUUID      string      `json:"file_uuid"`
	FilePath      *string     `json:"file_path"`
	Content       *string     `json:"content"`
	Language      *string     `json:"language"`
	OldPath       string      `json:"old_path"`
	NewPath       string      `json:"new_path"`
	Version       flex.OptInt `json:"version"`
	Subdomain     string      `json:"subdomain"`
	CustomDomain  string      `json:"custom_domain"`
}

// workspaceOf reads the request (its body, if any) and authorises its agent and workspace
// (workspace_uuid, in the body or the query).
func (s *server) workspaceOf(c *gin.Context) (workspaceRequest, workspaces.Workspace, error) {
	var req workspaceRequest
	botID, err := s.bindID(c, &req, &req.scope, &req.WorkspaceUUID, "workspace_uuid")
	if err != nil {
		return req, workspaces.Workspace{}, err
	}
	w, err := s.workspaces.Get(c, req.ProjectID, botID, req.WorkspaceUUID)
	return req, w, err
}

func (s *server) listWorkspaces(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.workspaces.List(c, sc.ProjectID, b.ID, page)
	return gin.H{"total": total, "workspaces": list, "pagination": page.Of(total)}, err
}

func (s *server) createWorkspace(c *gin.Context) (any, error) {
	var req workspaceRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	w, err := s.workspaces.Create(c, req.ProjectID, botID, req.Name)
	return gin.H{"workspace": w}, err
}

func (s *server) deleteWorkspace(c *gin.Context) (any, error) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.workspaces.Delete(c, w.ProjectID, w.BotID, w.ID)
}

func (s *server) listWorkspaceFiles(c *gin.Context) (any, error) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	files, err := s.workspaces.Files(c, w)
	return gin.H{"workspace": w, "total": len(files), "files": files}, err
}

// readWorkspaceFile is a file with its content and its versions; with version, the file as it
// was at that version.
func (s *server) readWorkspaceFile(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	id, err := idOf(c, req.FileUUID, "file_uuid")
	if err != nil {
		return nil, err
	}
	if v := c.Query("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, apperr.Invalidf("version", "must be a version number of the file (1 or more)")
		}
		f, err := s.workspaces.FileVersion(c, w, id, n)
		return gin.H{"file": f}, err
	}
	f, err := s.workspaces.File(c, w, id)
	return gin.H{"file": f}, err
}

func (s *server) createWorkspaceFile(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	f, err := s.workspaces.CreateFile(c, w, workspaces.FileInput{Path: req.FilePath, Content: req.Content, Language: req.Language}, workspaces.ByAPI)
	return gin.H{"file": f}, err
}

// updateWorkspaceFile changes the file file_uuid names or, without one, the file at file_path.
func (s *server) updateWorkspaceFile(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	id := strings.TrimSpace(cmp.Or(req.FileUUID, c.Query("file_uuid")))
	if id == "" && req.FilePath != nil {
		found, err := s.workspaces.FileAt(c, w, *req.FilePath)
		if err != nil {
			return nil, err
		}
		id = found.ID
	}
	if id == "" {
		return nil, apperr.Invalidf("file_uuid", "is required")
	}
	f, err := s.workspaces.UpdateFile(c, w, id, workspaces.FileInput{Content: req.Content, Language: req.Language}, workspaces.ByAPI)
	return gin.H{"file": f}, err
}

func (s *server) deleteWorkspaceFile(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	id, err := idOf(c, req.FileUUID, "file_uuid")
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.workspaces.DeleteFile(c, w, id, workspaces.ByAPI)
}

// listWorkspaceTrash is a page of the workspace's deleted files, the last deleted first.
func (s *server) listWorkspaceTrash(c *gin.Context) (any, error) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	page, err := pageQuery(c)
	if err != nil {
		return nil, err
	}
	files, total, err := s.workspaces.Trash(c, w, page)
	return gin.H{"workspace": w, "total": total, "files": files, "pagination": page.Of(total)}, err
}

// undeleteWorkspaceFile brings a deleted file back from the workspace's trash.
func (s *server) undeleteWorkspaceFile(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	id, err := idOf(c, req.FileUUID, "file_uuid")
	if err != nil {
		return nil, err
	}
	f, err := s.workspaces.Undelete(c, w, id)
	return gin.H{"file": f}, err
}

func (s *server) renameWorkspaceFile(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	f, err := s.workspaces.RenameFile(c, w, req.OldPath, req.NewPath, workspaces.ByAPI)
	return gin.H{"file": f}, err
}

// restoreWorkspaceFile makes a file what it was at one of its versions.
func (s *server) restoreWorkspaceFile(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	id, err := idOf(c, req.FileUUID, "file_uuid")
	if err != nil {
		return nil, err
	}
	if !req.Version.Set || req.Version.Value < 1 {
		return nil, apperr.Invalidf("version", "is required: a version number of the file (its versions list them)")
	}
	f, err := s.workspaces.Restore(c, w, id, int(req.Version.Value), workspaces.ByAPI)
	return gin.H{"file": f}, err
}

// downloadWorkspace streams the workspace as a zip of its files. An error before the zip's
// first byte is answered as any error; one after it cuts the zip short (its central directory
// missing, no reader takes it for whole) and is logged.
func (s *server) downloadWorkspace(c *gin.Context) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	out := &zipAnswer{c: c, name: w.Name}
	if err := s.workspaces.Download(c, w, out); err != nil {
		if !out.started {
			httpx.Fail(c, err)
			return
		}
		httpx.Logger(c).Warn("workspace download cut short", "workspace", w.ID, "err", err)
		c.Abort()
	}
}

// zipAnswer writes the answer's headers at the zip's first byte.
type zipAnswer struct {
	c       *gin.Context
	name    string
	started bool
}

func (z *zipAnswer) Write(p []byte) (int, error) {
	if !z.started {
		z.started = true
		h := z.c.Writer.Header()
		h.Set("Content-Type", "application/zip")
		h.Set("Content-Disposition", cmp.Or(mime.FormatMediaType("attachment", map[string]string{"filename": z.name + ".zip"}),
			"attachment; filename=workspace.zip"))
		h.Set("X-Content-Type-Options", "nosniff")
		z.c.Status(http.StatusOK)
	}
	return z.c.Writer.Write(p)
}
