package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
)

const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1" // the first address of serviceCIDR: the kubernetes Service
	// Admission plugins on top of kube-apiserver's defaults (which include
	// NamespaceLifecycle, ServiceAccount, PodSecurity, ResourceQuota,
	// TaintNodesByCondition, MutatingAdmissionPolicy is beta and off,
	// ValidatingAdmissionPolicy and the webhooks). OwnerReferencesPermissionEnforcement
	// is what makes blockOwnerDeletion need the owner's finalizers
	// subresource, as on OpenShift and hardened clusters.
	extraAdmission = "OwnerReferencesPermissionEnforcement"
	// The controllers a queue on a real cluster relies on; see usage().
	controllers = "garbage-collector-controller,namespace-controller,serviceaccount-controller," +
		"node-lifecycle-controller,taint-eviction-controller,pod-garbage-collector-controller," +
		"resourceclaim-controller,clusterrole-aggregation-controller"
)

// ports are chosen once per state directory and reused on a restart, so
// a kubeconfig written before the restart still reaches the server.
type ports struct {
	API      int `json:"api"`
	EtcdPeer int `json:"etcdPeer"`
	EtcdCli  int `json:"etcdClient"`
}

func loadPorts(path string, wantAPI int) (*ports, error) {
	p := &ports{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, p); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if wantAPI != 0 {
		p.API = wantAPI
	}
	// Every port picked here stays bound until all are picked, so the
	// kernel cannot hand one out twice; a port the caller asked for (or a
	// restart reuses) is never taken for another.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	taken := func(n int) bool { return n == p.API || n == p.EtcdPeer || n == p.EtcdCli }
	for _, pp := range []*int{&p.API, &p.EtcdPeer, &p.EtcdCli} {
		for *pp == 0 {
			n, l, err := freePort()
			if err != nil {
				return nil, err
			}
			held = append(held, l)
			if !taken(n) {
				*pp = n
			}
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return p, os.WriteFile(path, b, 0o600)
}

// identities are the static tokens of the control plane's own clients.
// They are kept in the state directory so a restart keeps them.
type identities struct {
	Admin     string `json:"admin"`
	Scheduler string `json:"scheduler"`
	KCM       string `json:"controllerManager"`
	Kubelet   string `json:"kubelet"`
}

func loadIdentities(path, admin string) (*identities, error) {
	id := &identities{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, id); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if admin != "" {
		id.Admin = admin
	}
	for _, t := range []*string{&id.Admin, &id.Scheduler, &id.KCM, &id.Kubelet} {
		if *t != "" {
			continue
		}
		r, err := randomToken()
		if err != nil {
			return nil, err
		}
		*t = r
	}
	b, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	return id, os.WriteFile(path, b, 0o600)
}

// writeTokenFile writes kube-apiserver's --token-auth-file: the control
// plane's identities, then the lines of extra (the --tokens file).
func writeTokenFile(path string, id *identities, extra string) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s,admin,admin,\"system:masters\"\n", id.Admin)
	fmt.Fprintf(&sb, "%s,system:kube-scheduler,system:kube-scheduler,\n", id.Scheduler)
	fmt.Fprintf(&sb, "%s,system:kube-controller-manager,system:kube-controller-manager,\n", id.KCM)
	// One identity for every fake node's kubelet: it is a stand-in for
	// many kubelets, so it cannot be system:node:<one name>.
	fmt.Fprintf(&sb, "%s,aiq:kubelet-standin,aiq:kubelet-standin,\"system:masters\"\n", id.Kubelet)
	if extra != "" {
		b, err := os.ReadFile(extra)
		if err != nil {
			return fmt.Errorf("--tokens: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			sb.WriteString(line)
			sb.WriteByte('\n')
		}
	}
	return os.WriteFile(path, []byte(sb.String()), 0o600)
}

// writeKubeconfig writes a kubeconfig for one token user.
func writeKubeconfig(path, server string, caPEM []byte, user, token string) error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: aiq-realcluster
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: aiq-realcluster
  context: {cluster: aiq-realcluster, user: %s, namespace: default}
current-context: aiq-realcluster
`, server, b64(caPEM), user, token, user)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(kc), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func startEtcd(dir string, p *ports) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "aiq"
	cfg.Dir = dir
	cli, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", p.EtcdCli))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", p.EtcdPeer))
	cfg.ListenClientUrls = []url.URL{*cli}
	cfg.AdvertiseClientUrls = []url.URL{*cli}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	// A test cluster: losing the last writes on a machine crash is fine,
	// and fsync on every write would make it several times slower.
	cfg.UnsafeNoFsync = true
	// Compact the history now and then like a real cluster does, so a
	// watch from an old resourceVersion gets "too old" as it would.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd: %v", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("etcd: not ready after 60 s")
	}
}

func apiserverArgs(cfg *config, st string, p *ports, k *pki, fp *frontProxy) []string {
	authz := "Node,RBAC"
	if cfg.authzNone {
		authz = "AlwaysAllow"
	}
	args := []string{
		"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", p.EtcdCli),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.API),
		"--tls-cert-file=" + k.serveCert,
		"--tls-private-key-file=" + k.serveKey,
		"--client-ca-file=" + k.caCert,
		"--token-auth-file=" + filepath.Join(st, "tokens.csv"),
		"--authorization-mode=" + authz,
		"--enable-admission-plugins=" + extraAdmission,
		"--allow-privileged=true",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + k.saPub,
		"--service-account-signing-key-file=" + k.saKey,
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		// The loopback address cannot be a Service endpoint.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(st, "certs"),
		"--profiling=false",
		fmt.Sprintf("--v=%d", cfg.verbose),
		// The aggregation layer, as kubeadm sets it up: APIServices are
		// proxied with the front-proxy client certificate and the
		// caller's identity in X-Remote-* headers, to the endpoint of
		// the Service (EndpointSlices) rather than its cluster IP: no
		// kube-proxy runs here.
		"--requestheader-client-ca-file=" + fp.caCert,
		"--requestheader-allowed-names=" + frontProxyCN,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + fp.clientCert,
		"--proxy-client-key-file=" + fp.clientKey,
		"--enable-aggregator-routing=true",
	}
	if cfg.dumpRequest {
		pol := filepath.Join(st, "audit-policy.yaml")
		// Written here rather than shipped: it is one fixed rule.
		_ = os.WriteFile(pol, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600)
		args = append(args, "--audit-policy-file="+pol, "--audit-log-path="+filepath.Join(st, "audit.log"))
	}
	return args
}

// waitReady polls /readyz until it answers "ok" or ctx ends.
func waitReady(ctx context.Context, server string, caPEM []byte, token string, apiErr <-chan error) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(120 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err == nil {
			b := make([]byte, 256)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = fmt.Sprintf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(b[:n])))
		} else {
			last = err.Error()
		}
		select {
		case err := <-apiErr:
			return fmt.Errorf("kube-apiserver exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("kube-apiserver not ready after 120 s (last: %s)", last)
}

// waitPortsFree waits up to 30 s until each port can be bound on 127.0.0.1.
func waitPortsFree(ctx context.Context, ports ...int) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, port := range ports {
		for {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				l.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("port %d is still in use after 30 s (another aiq-realcluster on this state directory?): %v", port, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// child is one control-plane component in its own process.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

func startChild(name, log string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{name}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	// The child dies with us even if we are killed with SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait(); f.Close() }()
	return c, nil
}

func (c *child) stop() {
	if c == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM) // it may have exited already
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill() // did not stop in time
		<-c.done
	}
}

func say(format string, a ...any) {
	fmt.Printf("aiq-realcluster: "+format+"\n", a...)
}

// run starts the whole control plane and blocks until ctx ends or a
// component fails.
func run(ctx context.Context, cfg *config) (err error) {
	t0 := time.Now()
	st := cfg.stateDir
	if st == "" {
		st, err = os.MkdirTemp("", "aiq-realcluster.")
		if err != nil {
			return err
		}
		defer os.RemoveAll(st)
	} else if err := os.MkdirAll(st, 0o700); err != nil {
		return err
	}
	st, err = filepath.Abs(st)
	if err != nil {
		return err
	}
	var nodes []nodeSpec
	if cfg.nodesFile != "" {
		if nodes, err = loadNodes(cfg.nodesFile); err != nil {
			return err
		}
	}
	k, err := makePKI(filepath.Join(st, "pki"))
	if err != nil {
		return fmt.Errorf("keys: %v", err)
	}
	fp, err := makeFrontProxy(filepath.Join(st, "pki"))
	if err != nil {
		return fmt.Errorf("front-proxy keys: %v", err)
	}
	p, err := loadPorts(filepath.Join(st, "ports.json"), cfg.port)
	if err != nil {
		return err
	}
	id, err := loadIdentities(filepath.Join(st, "identities.json"), cfg.adminToken)
	if err != nil {
		return err
	}
	if err := writeTokenFile(filepath.Join(st, "tokens.csv"), id, cfg.tokensFile); err != nil {
		return err
	}

	// A restart on the same state directory reuses the ports; the last
	// run's process may still be letting go of them.
	if err := waitPortsFree(ctx, p.API, p.EtcdCli, p.EtcdPeer); err != nil {
		return err
	}
	etcd, err := startEtcd(filepath.Join(st, "etcd"), p)
	if err != nil {
		return err
	}
	defer etcd.Close()
	say("etcd ready on 127.0.0.1:%d (%.1fs)", p.EtcdCli, time.Since(t0).Seconds())

	apiCtx, apiCancel := context.WithCancel(context.Background())
	apiErr := make(chan error, 1)
	go func() {
		cmd := apiserverapp.NewAPIServerCommand()
		cmd.SetArgs(apiserverArgs(cfg, st, p, k, fp))
		cmd.SilenceUsage = true
		apiErr <- cmd.ExecuteContext(apiCtx)
	}()
	defer func() {
		apiCancel()
		select {
		case <-apiErr:
		case <-time.After(10 * time.Second):
		}
	}()
	server := fmt.Sprintf("https://127.0.0.1:%d", p.API)
	if err := waitReady(ctx, server, k.caPEM, id.Admin, apiErr); err != nil {
		return err
	}
	say("kube-apiserver ready on %s (%.1fs)", server, time.Since(t0).Seconds())

	kcAdmin := cfg.kubeconfig
	kcSched := filepath.Join(st, "scheduler.kubeconfig")
	kcKCM := filepath.Join(st, "controller-manager.kubeconfig")
	kcKubelet := filepath.Join(st, "kubelet.kubeconfig")
	for _, w := range []struct{ path, user, token string }{
		{kcSched, "system:kube-scheduler", id.Scheduler},
		{kcKCM, "system:kube-controller-manager", id.KCM},
		{kcKubelet, "aiq:kubelet-standin", id.Kubelet},
	} {
		if err := writeKubeconfig(w.path, server, k.caPEM, w.user, w.token); err != nil {
			return err
		}
	}

	v := fmt.Sprintf("--v=%d", cfg.verbose)
	sched, err := startChild("kube-scheduler", filepath.Join(st, "scheduler.log"),
		"--kubeconfig="+kcSched, "--authentication-kubeconfig="+kcSched,
		"--authorization-kubeconfig="+kcSched, "--leader-elect=false", "--secure-port=0",
		// A large cluster's scheduler is given room to bind quickly; the
		// default 50 QPS would make it the bottleneck of every benchmark.
		"--kube-api-qps=2000", "--kube-api-burst=4000", v)
	if err != nil {
		return err
	}
	defer sched.stop()
	kcm, err := startChild("kube-controller-manager", filepath.Join(st, "controller-manager.log"),
		"--kubeconfig="+kcKCM, "--authentication-kubeconfig="+kcKCM,
		"--authorization-kubeconfig="+kcKCM, "--leader-elect=false", "--secure-port=0",
		"--controllers="+controllers, "--use-service-account-credentials=true",
		"--service-account-private-key-file="+k.saKey, "--root-ca-file="+k.caCert,
		"--cluster-signing-cert-file="+k.caCert, "--cluster-signing-key-file="+k.caKey,
		"--kube-api-qps=500", "--kube-api-burst=1000", v)
	if err != nil {
		return err
	}
	defer kcm.stop()

	kl, err := newKubelet(kcKubelet, nodes, cfg.timeScale, time.Duration(cfg.leaseEvery*float64(time.Second)))
	if err != nil {
		return err
	}
	klCtx, klCancel := context.WithCancel(ctx)
	klErr := make(chan error, 1)
	if err := kl.register(klCtx); err != nil {
		klCancel()
		return fmt.Errorf("kubelet stand-in: %v", err)
	}
	go func() { klErr <- kl.run(klCtx) }()
	defer func() { klCancel(); <-klErr }()

	// The admin kubeconfig last: tests wait for it to appear.
	if err := writeKubeconfig(kcAdmin, server, k.caPEM, "admin", id.Admin); err != nil {
		return err
	}
	fmt.Printf("aiq-realcluster listening on %s kubeconfig=%s state=%s nodes=%d front-proxy-ca=%s (%.1fs)\n",
		server, kcAdmin, st, len(nodes), fp.caCert, time.Since(t0).Seconds())

	select {
	case <-ctx.Done():
		say("stopping")
		return nil
	case err := <-apiErr:
		return fmt.Errorf("kube-apiserver exited: %v", err)
	case err := <-sched.done:
		return fmt.Errorf("kube-scheduler exited: %v (see %s)", err, filepath.Join(st, "scheduler.log"))
	case err := <-kcm.done:
		return fmt.Errorf("kube-controller-manager exited: %v (see %s)", err, filepath.Join(st, "controller-manager.log"))
	case err := <-etcd.Err():
		return fmt.Errorf("etcd: %v", err)
	case err := <-klErr:
		klErr <- err // for the deferred wait
		return fmt.Errorf("kubelet stand-in: %v", err)
	}
}
