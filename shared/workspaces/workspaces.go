// Package workspaces is agents' workspaces: small file trees (a web site, notes, data) an agent
// and its team edit through the API, downloadable as a zip. Every path is confined to its
// workspace (CleanPath); a workspace holds at most MaxFiles files and MaxBytes bytes, of the
// text and web-asset types in Types; and every change of a file keeps the file's previous
// state (its versions, the last MaxVersions within MaxVersionBytes) so that an edit can be
// undone (Restore).
//
// A workspace's counters of files and bytes are the quota: a write reserves its growth by one
// conditional update of the workspace (refused when the workspace would go over a limit), then
// writes the file, and gives the reservation back when the write fails. There are no
// transactions: a process that dies between the two leaves the counters over, never under,
// what the files take.
package workspaces

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Resource names workspaces in errors; FileResource their files; DeletedResource the files of
// their trash.
const (
	Resource        = "workspace"
	FileResource    = "workspace_file"
	DeletedResource = "workspace_deleted_file"
)

// Bounds of a workspace and its files.
const (
	MaxPerAgent = 20
	MaxFiles    = 200
	// MaxTrash is how many deleted files a workspace's trash keeps: a delete past it drops the
	// oldest, so that creating and deleting files in a loop cannot grow the store without bound.
	MaxTrash         = 50
	MaxBytes         = 10 << 20
	MaxFileBytes     = 512 << 10
	MaxVersions      = 20
	MaxVersionBytes  = 2 << 20
	MaxNameLength    = 200
	MaxLanguageBytes = 50
)

// Workspace is an agent's file tree.
type Workspace struct {
	ID        string `json:"id" bson:"_id"`
	UUID      string `json:"uuid" bson:"uuid"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"-" bson:"bot_id"`
	Name      string `json:"name" bson:"name"`
	// Files and Bytes are what its files take now (their versions aside): its quota's counters.
	Files int   `json:"file_count" bson:"files"`
	Bytes int64 `json:"total_bytes" bson:"bytes"`
	// Subdomain is where the workspace is published as a site ("" when it is not); PublishedAt
	// since when.
	Subdomain   string     `json:"subdomain" bson:"subdomain,omitempty"`
	PublishedAt *time.Time `json:"published_at" bson:"published_at,omitempty"`
	// Domain is its custom domain (nil: none); VerifiedDomain the domain's name once its TXT
	// record is found (one workspace's at most).
	Domain         *Domain   `json:"domain" bson:"domain,omitempty"`
	VerifiedDomain string    `json:"-" bson:"verified_domain,omitempty"`
	CreatedAt      time.Time `json:"created_at" bson:"created_at"`
	UpdatedAt      time.Time `json:"updated_at" bson:"updated_at"`
}

// FileInfo is a file without its content: what a listing shows.
type FileInfo struct {
	ID          string `json:"id" bson:"_id"`
	UUID        string `json:"uuid" bson:"uuid"`
	ProjectID   string `json:"-" bson:"project_id"`
	WorkspaceID string `json:"-" bson:"workspace_id"`
	// Path is the clean path (CleanPath), relative to the workspace's root.
	Path        string `json:"file_path" bson:"path"`
	Language    string `json:"language" bson:"language"`
	Encoding    string `json:"encoding" bson:"encoding"`
	ContentType string `json:"content_type" bson:"-"`
	// Size is the bytes of its content (decoded, for base64).
	Size int `json:"size" bson:"size"`
	// Version counts its changes: 1 when created, one more at each change.
	Version int `json:"version" bson:"version"`
	// Author made its current version.
	Author    `bson:",inline"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
	UpdatedAt time.Time `json:"updated_at" bson:"updated_at"`
}

// Author is who made a version of a file: the API (a key of the account, ByAPI), or an agent's
// run editing the workspace of its chat (ByRun). Files written before authors were kept have
// none.
type Author struct {
	By    string `json:"changed_by" bson:"changed_by,omitempty"`
	RunID string `json:"run_id,omitempty" bson:"run_id,omitempty"`
}

// ByAPI is the author of the changes made through the API.
var ByAPI = Author{By: "api"}

// ByRun is the author of the changes an agent's run makes.
func ByRun(id string) Author { return Author{By: "agent", RunID: id} }

// File is a file of a workspace with its content and its previous versions.
type File struct {
	FileInfo `bson:",inline"`
	Content  string    `json:"content" bson:"content"`
	Versions []Version `json:"versions" bson:"versions"`
	Rev      int64     `json:"-" bson:"rev"`
}

// Version is a previous state of a file: what it was from CreatedAt until the next change.
type Version struct {
	Version   int    `json:"version" bson:"version"`
	Path      string `json:"file_path" bson:"path"`
	Language  string `json:"language" bson:"language"`
	Encoding  string `json:"encoding" bson:"encoding"`
	Size      int    `json:"size" bson:"size"`
	Content   string `json:"-" bson:"content"`
	Author    `bson:",inline"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
}

// Deletion is when and by whom a file was deleted.
type Deletion struct {
	DeletedAt    time.Time `json:"deleted_at" bson:"deleted_at"`
	DeletedBy    string    `json:"deleted_by" bson:"deleted_by,omitempty"`
	DeletedRunID string    `json:"deleted_run_id,omitempty" bson:"deleted_run_id,omitempty"`
}

// Deleted is a file in its workspace's trash: the file as it was when deleted, its versions
// included, and its deletion.
type Deleted struct {
	File     `bson:",inline"`
	Deletion `bson:",inline"`
}

// DeletedInfo is a deleted file without its content: what the trash's listing shows.
type DeletedInfo struct {
	FileInfo `bson:",inline"`
	Deletion `bson:",inline"`
}

// Repo stores workspaces and their files. Reads of a workspace are by project, agent and the
// workspace's id or uuid; reads of a file by its workspace's id and its own id or uuid.
type Repo interface {
	Insert(ctx context.Context, w Workspace) error
	Get(ctx context.Context, projectID, botID, idOrUUID string) (Workspace, error)
	List(ctx context.Context, projectID, botID string, page paging.Page) ([]Workspace, int, error)
	Count(ctx context.Context, projectID, botID string) (int, error)
	// Grow adds files and bytes to the workspace's counters, and touches its updated_at, unless
	// that takes them over maxFiles or maxBytes (positive changes only are checked): it
	// reports whether it did. A workspace that does not exist is NotFound.
	Grow(ctx context.Context, projectID, id string, files int, bytes int64, maxFiles int, maxBytes int64) (bool, error)
	// Delete removes the workspace and then its files and its trash.
	Delete(ctx context.Context, projectID, id string) error

	// InsertFile adds f; a file of the same path in the workspace is a Conflict.
	InsertFile(ctx context.Context, f File) error
	File(ctx context.Context, projectID, workspaceID, idOrUUID string) (File, error)
	// FileAt is the file of the workspace at the clean path p.
	FileAt(ctx context.Context, projectID, workspaceID, p string) (File, error)
	// Files lists the workspace's files by path, without their contents.
	Files(ctx context.Context, projectID, workspaceID string) ([]FileInfo, error)
	// ReplaceFile writes f over its revision f.Rev-1; a file of the same path is a Conflict.
	ReplaceFile(ctx context.Context, f File) error
	// TrashFile moves the file d to its workspace's trash, if it is still at its revision d.Rev
	// (else a Conflict of FileResource+"_changed"); a file no longer there is NotFound.
	TrashFile(ctx context.Context, d Deleted) error
	// Trashed is the deleted file idOrUUID of the workspace's trash.
	Trashed(ctx context.Context, projectID, workspaceID, idOrUUID string) (Deleted, error)
	// Trash is a page of the workspace's deleted files, the last deleted first.
	Trash(ctx context.Context, projectID, workspaceID string, page paging.Page) ([]DeletedInfo, int, error)
	// DropTrashed removes the deleted file id from the workspace's trash (once undeleted).
	DropTrashed(ctx context.Context, projectID, workspaceID, id string) error
	// PruneTrash drops the workspace's deleted files but the keep last deleted.
	PruneTrash(ctx context.Context, projectID, workspaceID string, keep int) error
	// SetSubdomain publishes the workspace at subdomain since at, or unpublishes it when
	// subdomain is "": a subdomain another workspace has is a Conflict.
	SetSubdomain(ctx context.Context, projectID, id, subdomain string, at *time.Time) error
	// BySubdomain is the workspace published at subdomain, of any project.
	BySubdomain(ctx context.Context, subdomain string) (Workspace, error)
	// SetDomain sets the workspace's custom domain and verified domain ("": none), or unsets
	// both when d is nil: a verified domain another workspace has is a Conflict.
	SetDomain(ctx context.Context, projectID, id string, d *Domain, verified string) error
	// ByDomain is the workspace whose verified domain is host, of any project.
	ByDomain(ctx context.Context, host string) (Workspace, error)
	// EachFile calls fn with each file of the workspace, content included, in the order of their
	// paths, one at a time (a download streams them).
	EachFile(ctx context.Context, projectID, workspaceID string, fn func(File) error) error
}
