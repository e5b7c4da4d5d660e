package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// config is what the flags say. The names and meanings follow
// aiq-apiserver's flags (docs/local-cluster.md); the local server's fault
// injection has no counterpart on a real API server and is refused.
type config struct {
	stateDir    string  // --db: keeps etcd, keys and certificates across restarts ("" = temp dir)
	port        int     // --port: kube-apiserver's secure port (0 = any free port)
	kubeconfig  string  // --kubeconfig: where to write the admin kubeconfig
	nodesFile   string  // --nodes: the fake nodes
	timeScale   float64 // --time-scale: simulated run times go this much faster
	adminToken  string  // --token / --admin-token ("" = a random one)
	tokensFile  string  // --tokens: more static tokens (kube-apiserver's --token-auth-file format)
	authzNone   bool    // --authz=none: AlwaysAllow instead of RBAC (said loudly)
	leaseEvery  float64 // --lease-seconds: how often the kubelet stand-in renews node leases
	verbose     int     // --v: klog verbosity of the control-plane components
	dumpRequest bool    // --audit: write an audit log of every request to the state dir
}

var errHelp = errors.New("help")

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: aiq-realcluster [--db DIR] [--port N] [--kubeconfig PATH] [--nodes FILE]
                       [--time-scale X] [--tls] [--token T | --admin-token T]
                       [--tokens FILE] [--authz=rbac|none] [--lease-seconds S] [--v N]
                       [--audit]
The real kube-apiserver, kube-scheduler, kube-controller-manager (garbage
collector, namespace, service-account, node-lifecycle, taint-eviction,
pod-gc, resource-claim, cluster-role-aggregation controllers) and etcd on
127.0.0.1, with fake GPU nodes and a kubelet stand-in. Always HTTPS with
token authentication; RBAC unless --authz=none. The aggregation layer is
on: the front-proxy CA and client pair are <state>/pki/front-proxy-*
(the listening line names the CA an aggregated API server trusts), and
APIServices are proxied to their Service's EndpointSlice addresses.
  --db DIR         state directory (etcd data, keys); kept after exit. Default: a temp dir removed at exit
  --port N         kube-apiserver secure port on 127.0.0.1 (0 = any free port)
  --kubeconfig P   write the admin kubeconfig here (default ./aiq-kubeconfig)
  --nodes FILE     fake nodes, the same YAML aiq-apiserver reads
  --time-scale X   a pod annotated sim.aiq.dev/duration: 10m runs 1 min at 10
  --tls            accepted for compatibility: the real server is always HTTPS
  --token T        the admin token (user admin, group system:masters)
  --tokens FILE    more tokens, CSV token,user,uid,"group1,group2"
  --authz=MODE     rbac (default) or none (AlwaysAllow)
  --lease-seconds  node lease renewal interval of the kubelet stand-in (default 10)
  --v N            log verbosity of the control-plane components (default 0)
  --audit          write audit.log (every request, metadata level) to the state dir
`)
}

func parseFlags(args []string) (*config, error) {
	c := &config{kubeconfig: "./aiq-kubeconfig", timeScale: 1, leaseEvery: 10}
	num := func(flag, v string, lo, hi float64) (float64, error) {
		d, err := strconv.ParseFloat(v, 64)
		if err != nil || d < lo || d > hi {
			return 0, fmt.Errorf("%s: want a number in [%g, %g], got %q", flag, lo, hi, v)
		}
		return d, nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := ""
		if eq := strings.IndexByte(a, '='); eq > 0 && strings.HasPrefix(a, "--") {
			a, val = a[:eq], a[eq+1:]
		} else if i+1 < len(args) {
			val = args[i+1]
		}
		takes := true
		var err error
		var d float64
		switch a {
		case "--db":
			if val == ":memory:" {
				val = ""
			}
			c.stateDir = val
		case "--port":
			d, err = num(a, val, 0, 65535)
			c.port = int(d)
		case "--kubeconfig":
			c.kubeconfig = val
		case "--nodes":
			c.nodesFile = val
		case "--time-scale":
			c.timeScale, err = num(a, val, 0.001, 1e6)
		case "--token", "--admin-token":
			c.adminToken = val
		case "--tokens":
			c.tokensFile = val
		case "--lease-seconds":
			c.leaseEvery, err = num(a, val, 1, 3600)
		case "--v":
			d, err = num(a, val, 0, 10)
			c.verbose = int(d)
		case "--authz":
			switch val {
			case "rbac":
			case "none":
				c.authzNone = true
			default:
				err = fmt.Errorf("--authz: want rbac or none, got %q", val)
			}
			takes = !strings.Contains(args[i], "=")
		case "--tls":
			takes = false
		case "--audit":
			c.dumpRequest = true
			takes = false
		case "--help", "-h":
			return nil, errHelp
		case "--history", "--fault-500", "--fault-409", "--fault-watch-cut", "--fault-latency-ms", "--seed":
			return nil, fmt.Errorf("%s is the local server's (aiq-apiserver) and has no counterpart on the real control plane; run this suite on the local server", a)
		default:
			return nil, fmt.Errorf("unknown flag %q", args[i])
		}
		if err != nil {
			return nil, err
		}
		if takes && !strings.Contains(args[i], "=") {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s: missing value", a)
			}
			i++
		}
	}
	return c, nil
}
