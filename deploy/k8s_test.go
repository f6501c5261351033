package deploy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/agentplane/agentplane/shared/kit/config"
)

// manifests is every object of deploy/k8s, decoded strictly into the Kubernetes API's own types
// (an unknown or misspelt field fails the test), keyed by kind and name.
type manifests struct {
	configMaps   map[string]corev1.ConfigMap
	deployments  map[string]appsv1.Deployment
	services     map[string]corev1.Service
	jobs         map[string]batchv1.Job
	budgets      map[string]policyv1.PodDisruptionBudget
	autoscalers  map[string]autoscalingv2.HorizontalPodAutoscaler
	scaledObject map[string]scaledObject
}

// scaledObject is the part of KEDA's ScaledObject the test reads (KEDA's types are not a
// dependency of ours).
type scaledObject struct {
	Spec struct {
		ScaleTargetRef struct {
			Name string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount int `json:"minReplicaCount"`
		MaxReplicaCount int `json:"maxReplicaCount"`
		Triggers        []struct {
			Type     string            `json:"type"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	var kustomization struct {
		Resources []string `yaml:"resources"`
	}
	b, err := os.ReadFile("k8s/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &kustomization); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("k8s/*.yaml")
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(kustomization.Resources, name) {
			t.Errorf("%s is not listed in kustomization.yaml", name)
		}
	}
	m := manifests{configMaps: map[string]corev1.ConfigMap{}, deployments: map[string]appsv1.Deployment{},
		services: map[string]corev1.Service{}, jobs: map[string]batchv1.Job{}, budgets: map[string]policyv1.PodDisruptionBudget{},
		autoscalers: map[string]autoscalingv2.HorizontalPodAutoscaler{}, scaledObject: map[string]scaledObject{}}
	for _, name := range kustomization.Resources {
		b, err := os.ReadFile(filepath.Join("k8s", name))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			raw, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			kind, _ := doc["kind"].(string)
			meta, _ := doc["metadata"].(map[string]any)
			objName, _ := meta["name"].(string)
			if objName == "" {
				t.Fatalf("%s: a %s without a name", name, kind)
			}
			strict := func(b []byte, o any) error { return sigsyaml.UnmarshalStrict(b, o) }
			switch kind {
			case "ConfigMap":
				err = decodeInto(raw, m.configMaps, objName, strict)
			case "Deployment":
				err = decodeInto(raw, m.deployments, objName, strict)
			case "Service":
				err = decodeInto(raw, m.services, objName, strict)
			case "Job":
				err = decodeInto(raw, m.jobs, objName, strict)
			case "PodDisruptionBudget":
				err = decodeInto(raw, m.budgets, objName, strict)
			case "HorizontalPodAutoscaler":
				err = decodeInto(raw, m.autoscalers, objName, strict)
			case "ScaledObject":
				err = decodeInto(raw, m.scaledObject, objName, func(b []byte, o any) error { return sigsyaml.Unmarshal(b, o) })
			default:
				t.Fatalf("%s: unexpected kind %q", name, kind)
			}
			if err != nil {
				t.Fatalf("%s: %s %s: %v", name, kind, objName, err)
			}
		}
	}
	return m
}

// decodeInto decodes raw into a T and keeps it in into under name.
func decodeInto[T any](raw []byte, into map[string]T, name string, unmarshal func([]byte, any) error) error {
	var o T
	if err := unmarshal(raw, &o); err != nil {
		return err
	}
	into[name] = o
	return nil
}

// env is what a container of the manifests sees: its ConfigMaps, then its own env entries.
func (m manifests) env(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			cm, ok := m.configMaps[from.ConfigMapRef.Name]
			if !ok {
				t.Fatalf("%s reads ConfigMap %q, which is not in the manifests", c.Name, from.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				env[k] = v
			}
		}
		if from.SecretRef != nil && (from.SecretRef.Optional == nil || !*from.SecretRef.Optional) {
			t.Errorf("%s needs Secret %q; it is created outside the manifests, so it must be optional", c.Name, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

func TestManifestsConfigurationIsTheBinarys(t *testing.T) {
	m := loadManifests(t)
	for name, cm := range m.configMaps {
		for k := range cm.Data {
			if !knownVar(k) {
				t.Errorf("ConfigMap %s: %s is not a variable the binary reads", name, k)
			}
		}
		if _, err := config.Load("worker", func(k string) string { return cm.Data[k] }); err != nil {
			t.Errorf("ConfigMap %s: the binary refuses it: %v", name, err)
		}
	}
	for name, d := range m.deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if !knownVar(e.Name) {
					t.Errorf("%s: %s is not a variable the binary reads", name, e.Name)
				}
			}
		}
	}
}

func TestManifestsRoles(t *testing.T) {
	m := loadManifests(t)
	var images []string
	for _, role := range []string{"api", "worker", "scheduler"} {
		t.Run(role, func(t *testing.T) {
			d, ok := m.deployments["agentplane-"+role]
			if !ok {
				t.Fatal("no Deployment")
			}
			sel, err := deploymentSelector(d)
			if err != nil {
				t.Fatal(err)
			}
			pod := d.Spec.Template
			if !sel.Matches(labels.Set(pod.Labels)) {
				t.Fatalf("the selector %v does not select the pod template's labels %v", sel, pod.Labels)
			}
			if len(pod.Spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
			}
			c := pod.Spec.Containers[0]
			images = append(images, c.Image)
			if len(c.Command) != 0 || !slices.Equal(c.Args, []string{role}) {
				t.Errorf("command %v args %v, want the image's entrypoint with args [%s]", c.Command, c.Args, role)
			}
			env := m.env(t, c)
			cfg, err := config.Load(role, func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("the binary refuses this environment: %v", err)
			}
			for _, need := range []string{"AGENTPLANE_MONGO_URI", "AGENTPLANE_REDIS_URL", "AGENTPLANE_NATS_URL"} {
				if env[need] == "" {
					t.Errorf("%s is not set", need)
				}
			}
			// The port the probes and Prometheus reach is the one the role listens on.
			addr := cfg.MetricsAddr
			if role == "api" {
				addr = cfg.HTTPAddr
			}
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("the role listens on %q: %v", addr, err)
			}
			if len(c.Ports) != 1 || strconv.Itoa(int(c.Ports[0].ContainerPort)) != port {
				t.Fatalf("container ports %v, but the role listens on %s", c.Ports, addr)
			}
			if pod.Annotations["prometheus.io/port"] != port || pod.Annotations["prometheus.io/path"] != "/metrics" {
				t.Errorf("scrape annotations %v, want /metrics on %s", pod.Annotations, port)
			}
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("no HTTP %s probe", p.name)
					continue
				}
				if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != intstr.FromString(c.Ports[0].Name) {
					t.Errorf("%s probe %s on %v, want %s on %s", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path, c.Ports[0].Name)
				}
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("resources %v, want CPU and memory requests and a memory limit", c.Resources)
			}
			if role == "api" && c.Resources.Limits.Memory().Value() <= cfg.MemoryCacheBytes {
				t.Errorf("memory limit %v leaves no room beyond the %d MiB retrieval cache", c.Resources.Limits.Memory(), cfg.MemoryCacheBytes>>20)
			}
			grace := pod.Spec.TerminationGracePeriodSeconds
			if grace == nil || time.Duration(*grace)*time.Second <= cfg.ShutdownTimeout {
				t.Errorf("terminationGracePeriodSeconds %v, want more than the shutdown timeout %s", grace, cfg.ShutdownTimeout)
			}
			if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Error("the pod may run as root")
			}
			if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Error("the container's root filesystem is writable or it may escalate privileges")
			}
			if !m.budgeted(pod.Labels) {
				t.Error("no PodDisruptionBudget selects its pods")
			}
		})
	}
	for _, j := range m.jobs {
		c := j.Spec.Template.Spec.Containers[0]
		images = append(images, c.Image)
		if !slices.Equal(c.Args, []string{"migrate"}) {
			t.Errorf("Job %s runs %v, want [migrate]", j.Name, c.Args)
		}
	}
	if len(m.jobs) != 1 {
		t.Errorf("%d Jobs, want the migrate Job", len(m.jobs))
	}
	slices.Sort(images)
	if len(slices.Compact(slices.Clone(images))) != 1 {
		t.Errorf("the roles run different images: %v", images)
	}
}

func deploymentSelector(d appsv1.Deployment) (labels.Selector, error) {
	if d.Spec.Selector == nil {
		return nil, errors.New("no selector")
	}
	return labels.ValidatedSelectorFromSet(d.Spec.Selector.MatchLabels)
}

func (m manifests) budgeted(podLabels map[string]string) bool {
	for _, b := range m.budgets {
		if b.Spec.Selector != nil && labels.SelectorFromSet(b.Spec.Selector.MatchLabels).Matches(labels.Set(podLabels)) {
			return true
		}
	}
	return false
}

func TestManifestsServiceAndAutoscaling(t *testing.T) {
	m := loadManifests(t)
	api := m.deployments["agentplane-api"]
	svc, ok := m.services["agentplane-api"]
	if !ok {
		t.Fatal("no Service for the api")
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(api.Spec.Template.Labels)) {
		t.Errorf("the Service selects %v, not the api's pods %v", svc.Spec.Selector, api.Spec.Template.Labels)
	}
	for _, p := range svc.Spec.Ports {
		if !slices.ContainsFunc(api.Spec.Template.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool {
			return p.TargetPort == intstr.FromString(cp.Name) || p.TargetPort == intstr.FromInt32(cp.ContainerPort)
		}) {
			t.Errorf("the Service's port %s targets %s, which the api does not expose", p.Name, p.TargetPort.String())
		}
	}

	hpa, ok := m.autoscalers["agentplane-api"]
	if !ok || hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != api.Name {
		t.Errorf("no HorizontalPodAutoscaler scales the api: %+v", hpa.Spec.ScaleTargetRef)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
		t.Error("the api may scale below two replicas")
	}

	worker := m.deployments["agentplane-worker"]
	so, ok := m.scaledObject["agentplane-worker"]
	if !ok || so.Spec.ScaleTargetRef.Name != worker.Name {
		t.Fatalf("no ScaledObject scales the worker: %+v", so.Spec.ScaleTargetRef)
	}
	env := m.env(t, worker.Spec.Template.Spec.Containers[0])
	cfg, err := config.Load("worker", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	redisURL, err := url.Parse(cfg.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "redis" {
		t.Fatalf("triggers %+v, want KEDA's redis list scaler", so.Spec.Triggers)
	}
	md := so.Spec.Triggers[0].Metadata
	// asynq keeps a queue's waiting tasks in the list asynq:{<queue>}:pending.
	if want := "asynq:{" + cfg.Queue + "}:pending"; md["listName"] != want {
		t.Errorf("the autoscaler watches %q, but the worker's queue is %q", md["listName"], want)
	}
	if md["address"] != redisURL.Host || md["databaseIndex"] != strings.TrimPrefix(redisURL.Path, "/") {
		t.Errorf("the autoscaler reads Redis %s db %s, the worker %s", md["address"], md["databaseIndex"], cfg.RedisURL)
	}
	if n, err := strconv.Atoi(md["listLength"]); err != nil || n < cfg.WorkerConcurrency {
		t.Errorf("listLength %q: want a number of pending tasks per replica of at least the concurrency %d", md["listLength"], cfg.WorkerConcurrency)
	}
	if so.Spec.MinReplicaCount < 1 || so.Spec.MaxReplicaCount <= so.Spec.MinReplicaCount {
		t.Errorf("replicas %d-%d", so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
	}
}
