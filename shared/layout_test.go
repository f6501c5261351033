// The layout of the code, as rules a test can hold: shared/ is the domain (the folders directly
// under it), its adapters (shared/adapters: the store, the queue, model providers, metrics,
// tracing, the guarded HTTP client), the development and test stack (shared/devenv) and small
// utilities (shared/kit). docs/ARCHITECTURE.md tells the same in prose.
package shared_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agentplane/agentplane/"

// part is what a package of the module is, by its path.
func part(pkg string) string {
	rel := strings.TrimPrefix(pkg, module)
	for _, p := range []string{"api", "workers", "jobs", "events", "cmd", "deploy", "shared/adapters", "shared/devenv", "shared/kit"} {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return p
		}
	}
	return "domain"
}

// rule forbids packages of a part (or one package, by its path under the module) to depend,
// directly or not, on packages whose path begins with one of forbidden (module paths are given
// under the module; others whole), or, where forbidden says "domain", on any package of the
// domain.
type rule struct {
	who       string
	forbidden []string
	why       string
}

var drivers = []string{"github.com/hibiken/asynq", "github.com/gin-gonic/gin", "go.mongodb.org/mongo-driver"}

var rules = []rule{
	{"domain", append(drivers, "github.com/openai/openai-go", "api", "workers", "jobs", "events", "cmd", "shared/devenv", "shared/adapters"),
		"domain rules know no adapter, queue, web framework, database driver or model SDK: adapters implement the interfaces they declare"},
	{"shared/kit", append(drivers, "api", "workers", "jobs", "events", "cmd", "shared/devenv", "shared/adapters", "domain"),
		"utilities depend on nothing of the domain"},
	{"shared/adapters", []string{"api", "workers", "jobs", "events", "cmd", "shared/devenv"}, "adapters serve every role"},
	{"api", []string{"workers", "jobs", "cmd", "shared/devenv", "shared/adapters/store", "shared/adapters/queue"},
		"the API role calls the domain; the composition root (cmd/agentplane/app) hands it the adapters"},
	{"api/httpx", []string{"api"}, "what the doors share imports no door (api and the doors import it)"},
	{"workers", []string{"api", "jobs", "cmd", "shared/devenv"}, "roles do not import each other (events is the workers' and the API's way to NATS)"},
	{"jobs", []string{"api", "workers", "events", "cmd", "shared/devenv"}, "roles do not import each other"},
	{"events", []string{"api", "workers", "jobs", "cmd", "shared/devenv"}, "roles do not import each other"},
	{"shared/chats", []string{"shared/agentruns"}, "the chat turn calls agent runs through an interface agentruns implements"},
	{"shared/chats", []string{"shared/usermemory"}, "the chat turn reads and feeds end users' memories through an interface usermemory implements"},
	{"shared/kit/apperr", []string{"net/http"}, "the error-kind -> HTTP status table lives in api/httpx"},
}

// forbids reports whether dep is what a rule's forbidden entry f names.
func forbids(f, dep string) bool {
	if f == "domain" {
		return strings.HasPrefix(dep, module) && part(dep) == "domain"
	}
	full := f
	if !strings.Contains(f, ".") {
		full = module + f
	}
	return dep == full || strings.HasPrefix(dep, full+"/")
}

func TestLayout(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	packages := 0
	used := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		packages++
		for _, r := range rules {
			if r.who != part(pkg) && module+r.who != pkg {
				continue
			}
			used[r.who] = true
			for _, dep := range deps {
				for _, f := range r.forbidden {
					if forbids(f, dep) {
						t.Errorf("%s depends on %s: %s", strings.TrimPrefix(pkg, module), dep, r.why)
					}
				}
			}
		}
	}
	for _, r := range rules {
		if !used[r.who] {
			t.Errorf("no package is %s: the rule holds nothing", r.who)
		}
	}
	if packages < 30 {
		t.Fatalf("go list named %d packages", packages)
	}
}
