// Package deploy holds the Dockerfile and operational files; its tests keep them honest, since
// no Docker engine runs where the tests do.
package deploy

import (
	"bufio"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"gopkg.in/yaml.v3"

	"github.com/agentplane/agentplane/shared/kit/config"
)

type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		Build       struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		DependsOn map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
	} `yaml:"services"`
}

func loadCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

func knownVar(name string) bool {
	return slices.ContainsFunc(config.Vars, func(v config.Var) bool { return v.Name == name })
}

func TestComposeDependencies(t *testing.T) {
	c := loadCompose(t)
	tests := []struct {
		service, image string
		command        []string
		port           string
	}{
		{"mongo", "mongo:7", []string{"--replSet"}, "27017"},
		{"redis", "redis:7", []string{"--appendonly", "yes", "--maxmemory-policy", "noeviction"}, "6379"},
		{"nats", "nats:2.10", []string{"-js"}, "4222"},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			s, ok := c.Services[tt.service]
			if !ok {
				t.Fatal("missing")
			}
			if s.Image != tt.image {
				t.Errorf("image %q, want %q", s.Image, tt.image)
			}
			cmd := strings.Join(s.Command, " ")
			for _, want := range tt.command {
				if !strings.Contains(cmd, want) {
					t.Errorf("command %q lacks %q", cmd, want)
				}
			}
			if !slices.Contains(s.Ports, tt.port+":"+tt.port) {
				t.Errorf("ports %v, want %s published", s.Ports, tt.port)
			}
		})
	}
}

func TestComposeRolesMatchTheBinary(t *testing.T) {
	c := loadCompose(t)
	for _, role := range []string{"migrate", "api", "worker", "scheduler"} {
		t.Run(role, func(t *testing.T) {
			s, ok := c.Services[role]
			if !ok {
				t.Fatal("missing")
			}
			if s.Build.Dockerfile != "deploy/Dockerfile" || s.Build.Context != "." {
				t.Errorf("build %+v, want deploy/Dockerfile in .", s.Build)
			}
			if len(s.Command) != 1 || s.Command[0] != role {
				t.Errorf("command %v, want [%s]", s.Command, role)
			}
			for name, value := range s.Environment {
				if !knownVar(name) {
					t.Errorf("%s is not a variable the binary reads", name)
				}
				checkURL(t, c, name, value)
			}
			for _, need := range []string{"AGENTPLANE_MONGO_URI", "AGENTPLANE_REDIS_URL", "AGENTPLANE_NATS_URL"} {
				if s.Environment[need] == "" {
					t.Errorf("%s is not set", need)
				}
			}
			if role != "migrate" && s.DependsOn["migrate"].Condition != "service_completed_successfully" {
				t.Error("does not wait for migrate")
			}
		})
	}
	api := c.Services["api"]
	_, port, err := net.SplitHostPort(api.Environment["AGENTPLANE_HTTP_ADDR"])
	if err != nil || !slices.Contains(api.Ports, port+":"+port) {
		t.Errorf("api listens on %q but publishes %v", api.Environment["AGENTPLANE_HTTP_ADDR"], api.Ports)
	}
	cfg, err := config.Load("api", func(string) string { return "" })
	if err != nil || cfg.HTTPAddr != ":"+port {
		t.Errorf("the api role's default address %q differs from compose's :%s", cfg.HTTPAddr, port)
	}
}

// checkURL makes sure a dependency URL points at a compose service on its port.
func checkURL(t *testing.T, c compose, name, value string) {
	t.Helper()
	if !strings.HasSuffix(name, "_URI") && !strings.HasSuffix(name, "_URL") {
		return
	}
	u, err := url.Parse(value)
	if err != nil {
		t.Errorf("%s=%q: %v", name, value, err)
		return
	}
	dep, ok := c.Services[u.Hostname()]
	if !ok {
		t.Errorf("%s points at %q, which is no service", name, u.Hostname())
		return
	}
	if !slices.Contains(dep.Ports, u.Port()+":"+u.Port()) {
		t.Errorf("%s uses port %s, which %s does not serve", name, u.Port(), u.Hostname())
	}
}

func TestDockerfile(t *testing.T) {
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var froms, lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		lines = append(lines, line)
		if strings.HasPrefix(line, "FROM ") {
			froms = append(froms, line)
		}
	}
	if len(froms) != 2 {
		t.Fatalf("want a two-stage build, got %v", froms)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	goMinor := regexp.MustCompile(`^\d+\.\d+`).FindString(mf.Go.Version)
	if !strings.HasPrefix(froms[0], "FROM golang:"+goMinor+" ") {
		t.Errorf("build stage %q does not use go.mod's Go %s", froms[0], goMinor)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/agentplane", "USER nonroot", `ENTRYPOINT ["/agentplane"]`, "EXPOSE 8080"} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// The Docker build context (the repository less .dockerignore) holds no executable and no file
// over 5 MB: `COPY . .` ships the context, and a binary built in the working tree (`go build`
// makes ./agentplane) would ride along into the image.
func TestBuildContextHoldsNoBinaries(t *testing.T) {
	raw, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var ignore []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			ignore = append(ignore, strings.Trim(line, "/"))
		}
	}
	ignored := func(rel string) bool {
		for _, p := range ignore {
			if ok, _ := filepath.Match(p, rel); ok {
				return true
			}
			if ok, _ := filepath.Match(p, filepath.Base(rel)); ok && !strings.Contains(p, "/") {
				return true
			}
		}
		return false
	}
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		if rel == "." {
			return nil
		}
		if ignored(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		head := make([]byte, 4)
		if f, err := os.Open(path); err == nil {
			_, _ = io.ReadFull(f, head)
			f.Close()
		}
		if info.Size() > 5<<20 || string(head) == "\x7fELF" {
			t.Errorf("%s (%d bytes) is in the Docker build context: remove it or list it in .dockerignore", rel, info.Size())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
