package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// The annotations the local server's simulated kubelet reads
// (test/apiserver/sim_kubelet.c), read the same way here.
const (
	annDuration = "sim.aiq.dev/duration"  // Go duration; how long the containers run (default 30s)
	annExit     = "sim.aiq.dev/exit-code" // the containers' exit code (default 0)
	// How long the containers take to exit after SIGTERM when the pod is
	// deleted (default 0: at once), capped by the grace period as a real
	// kubelet caps it with SIGKILL.
	annStop        = "sim.aiq.dev/stop-duration"
	defaultRunTime = 30 * time.Second
)

// kubelet stands in for the kubelets of every fake node: it registers the
// Nodes (status, Ready condition, lease), starts bound pods (Running,
// podIP, container statuses), ends them after their simulated run time
// with their exit code, and finishes graceful deletion (containers stop,
// terminal status, then the pod object is deleted with grace 0), so pods
// being deleted stay Terminating as long as they would on a real node.
type kubelet struct {
	cs         kubernetes.Interface
	nodes      map[string]*nodeSpec
	order      []string
	timeScale  float64
	leaseEvery time.Duration
	queue      workqueue.TypedRateLimitingInterface[string]
	lister     cache.Indexer

	mu        sync.Mutex
	timers    map[string]*time.Timer    // ns/name -> the pending finish or stop
	renewDone chan struct{}             // closed when the lease loop has ended
	leases    map[string]*coordv1.Lease // node name -> its lease as last written
	stops     map[string]bool           // ns/name -> its containers were told to stop
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func newKubelet(kubeconfig string, nodes []nodeSpec, timeScale float64, leaseEvery time.Duration) (*kubelet, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// One client for what many kubelets would send between them.
	rc.QPS, rc.Burst = 5000, 10000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	k := &kubelet{cs: cs, nodes: map[string]*nodeSpec{}, timeScale: timeScale, leaseEvery: leaseEvery,
		timers: map[string]*time.Timer{}, stops: map[string]bool{}, leases: map[string]*coordv1.Lease{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](
			20*time.Millisecond, 5*time.Second))}
	for i := range nodes {
		k.nodes[nodes[i].node.Name] = &nodes[i]
		k.order = append(k.order, nodes[i].node.Name)
	}
	return k, nil
}

func readyCondition(now metav1.Time) []corev1.NodeCondition {
	c := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg,
			LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		c(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		c(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		c(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		c(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
}

// registerNode creates or refreshes one Node, its status and its lease.
func (k *kubelet) registerNode(ctx context.Context, ns *nodeSpec) error {
	want := ns.node
	n, err := k.cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		n, err = k.cs.CoreV1().Nodes().Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("node %s: %v", want.Name, err)
	}
	// The node-lifecycle controller writes new Nodes too (it adds and
	// removes the not-ready taint), so the status update may meet a newer
	// resourceVersion: read the Node again and retry, as a kubelet does.
	// With thousands of nodes registering at once this happens every run.
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		now := metav1.Now()
		n = n.DeepCopy()
		n.Status.Capacity = want.Status.Capacity
		n.Status.Allocatable = want.Status.Allocatable
		n.Status.NodeInfo = want.Status.NodeInfo
		n.Status.Conditions = readyCondition(now)
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ns.ip},
			{Type: corev1.NodeHostName, Address: want.Name}}
		_, uerr := k.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(uerr) {
			if cur, gerr := k.cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{}); gerr == nil {
				n = cur
			}
		}
		return uerr
	})
	if err != nil {
		return fmt.Errorf("node %s status: %v", want.Name, err)
	}
	return k.renewLease(ctx, n)
}

func (k *kubelet) renewLease(ctx context.Context, n *corev1.Node) error {
	leases := k.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l, err = leases.Create(ctx, &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To(n.Name),
				LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: &now},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The lease loop and the registration both got here first:
			// the lease was just written, fresh.
			return nil
		}
	} else if err == nil {
		l.Spec.RenewTime = &now
		l, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err == nil {
		k.keepLease(l)
	}
	return err
}

// keepLease remembers the lease as last written, so the next renewal is
// one update (as a real kubelet renews its own lease).
func (k *kubelet) keepLease(l *coordv1.Lease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.leases[l.Name] = l
}

// register creates the nodes and waits until the node-lifecycle
// controller has taken the not-ready taint (which TaintNodesByCondition
// puts on every new Node) off each of them, as it does on a real cluster
// once the kubelet reports Ready.
func (k *kubelet) register(ctx context.Context) error {
	// Leases are renewed from the start: registering thousands of nodes
	// takes longer than a lease lasts, and a node whose lease ran out
	// while the others registered would keep its not-ready taint.
	k.renewDone = make(chan struct{})
	go k.renewLoop(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(k.order))
	sem := make(chan struct{}, 32)
	for _, name := range k.order {
		wg.Add(1)
		sem <- struct{}{}
		go func(ns *nodeSpec) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := k.registerNode(ctx, ns); err != nil {
				errs <- err
			}
		}(k.nodes[name])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	// The node-lifecycle controller takes the taint off a few hundred
	// nodes per second at best, and less on a busy machine: give large
	// clusters time in proportion (5,000 nodes: 190 s).
	wait := 90*time.Second + time.Duration(len(k.order))*20*time.Millisecond
	deadline := time.Now().Add(wait)
	for {
		list, err := k.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		tainted := 0
		for _, n := range list.Items {
			if k.nodes[n.Name] == nil {
				continue
			}
			for _, t := range n.Spec.Taints {
				if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
					tainted++
					break
				}
			}
		}
		if tainted == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d nodes still carry the not-ready taint after %.0f s (is the node-lifecycle controller running? see controller-manager.log)", tainted, wait.Seconds())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// run serves the pods of our nodes and renews the leases until ctx ends.
func (k *kubelet) run(ctx context.Context) error {
	f := informers.NewSharedInformerFactoryWithOptions(k.cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		}))
	inf := f.Core().V1().Pods().Informer()
	k.lister = inf.GetIndexer()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n any) { enqueue(n) },
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	defer k.queue.ShutDown()
	for i := 0; i < 8; i++ {
		go k.worker(ctx)
	}
	<-ctx.Done()
	<-k.renewDone // the lease loop register started
	return nil
}

// renewLoop renews every node's lease each leaseEvery until ctx ends,
// then closes k.renewDone.
func (k *kubelet) renewLoop(ctx context.Context) {
	defer close(k.renewDone)
	tick := time.NewTicker(k.leaseEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			k.renewAll(ctx)
		}
	}
}

// renewAll renews the leases of all nodes, 16 at a time (thousands of
// kubelets renew theirs in parallel on a real cluster; one after the
// other, 5,000 nodes took longer than a lease lasts on a busy machine).
func (k *kubelet) renewAll(ctx context.Context) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, name := range k.order {
		wg.Add(1)
		sem <- struct{}{}
		go func(name string) {
			defer wg.Done()
			defer func() { <-sem }()
			k.renewOne(ctx, name)
		}(name)
	}
	wg.Wait()
}

// renewOne renews one node's lease; a node that does not exist (deleted
// by a test, or not registered yet) renews nothing.
func (k *kubelet) renewOne(ctx context.Context, name string) {
	// One update of the lease as last written; anything else (a conflict,
	// a lease the garbage collector removed with its node) goes the long
	// way: read the node, then its lease.
	k.mu.Lock()
	l := k.leases[name]
	k.mu.Unlock()
	if l != nil {
		l = l.DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		nl, err := k.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			k.keepLease(nl)
			return
		}
		k.mu.Lock()
		delete(k.leases, name)
		k.mu.Unlock()
	}
	n, err := k.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err == nil {
		err = k.renewLease(ctx, n)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Printf("aiq-realcluster: kubelet: lease %s: %v\n", name, err)
	}
}

func (k *kubelet) worker(ctx context.Context) {
	for {
		key, quit := k.queue.Get()
		if quit {
			return
		}
		err := k.sync(ctx, key)
		if err != nil && ctx.Err() == nil {
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				fmt.Printf("aiq-realcluster: kubelet: pod %s: %v\n", key, err)
			}
			k.queue.AddRateLimited(key)
		} else {
			k.queue.Forget(key)
		}
		k.queue.Done(key)
	}
}

// after enqueues key once d has passed (replacing any earlier timer).
func (k *kubelet) after(key string, d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t := k.timers[key]; t != nil {
		t.Stop()
	}
	k.timers[key] = time.AfterFunc(d, func() {
		k.mu.Lock()
		delete(k.timers, key)
		k.mu.Unlock()
		k.queue.Add(key)
	})
}

// stopping reports whether key already has a stop under way, and marks it.
func (k *kubelet) stopping(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stops[key] {
		return true
	}
	k.stops[key] = true
	return false
}

func (k *kubelet) forget(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t := k.timers[key]; t != nil {
		t.Stop()
		delete(k.timers, key)
	}
	delete(k.stops, key)
}

func (k *kubelet) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) / k.timeScale)
}

func annDur(p *corev1.Pod, key string, dflt time.Duration) time.Duration {
	if v, ok := p.Annotations[key]; ok {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d
		}
	}
	return dflt
}

func exitCode(p *corev1.Pod) int32 {
	v, ok := p.Annotations[annExit]
	if !ok {
		return 0
	}
	x, err := strconv.Atoi(v)
	if err != nil || x < -255 || x > 255 {
		return 1 // unreadable: a failure, as on the local server
	}
	return int32(x)
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func hash32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func setCond(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, reason string, now metav1.Time) {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == t {
			if c.Status != s {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason = s, reason
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason,
		LastTransitionTime: now})
}

func containerStatuses(p *corev1.Pod, running bool, started, finished metav1.Time, code int32, reason string) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range p.Spec.Containers {
		cid := fmt.Sprintf("containerd://%08x%08x", hash32(string(p.UID)), hash32(c.Name))
		st := corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			ImageID:     fmt.Sprintf("%s@sha256:%08x", c.Image, hash32(c.Image)),
			ContainerID: cid, Ready: running, Started: ptr.To(running)}
		if running {
			st.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
		} else {
			st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
				StartedAt: started, FinishedAt: finished, ContainerID: cid}
		}
		out = append(out, st)
	}
	return out
}

// sync brings one pod a step further: start it, end it, or finish its
// deletion. It reads the informer's copy and writes with that copy's
// resourceVersion, so a conflict only means "look again".
func (k *kubelet) sync(ctx context.Context, key string) error {
	obj, exists, err := k.lister.GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		k.forget(key)
		return nil
	}
	pod := obj.(*corev1.Pod)
	ns := k.nodes[pod.Spec.NodeName]
	if ns == nil {
		return nil // bound to a node we do not simulate
	}
	now := metav1.Now()
	if pod.DeletionTimestamp != nil {
		return k.terminate(ctx, key, pod, now)
	}
	if terminal(pod) {
		return nil
	}
	if pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending {
		return k.start(ctx, key, pod, ns, now)
	}
	// Running: end it once its time has come.
	start := now
	if pod.Status.StartTime != nil {
		start = *pod.Status.StartTime
	}
	left := k.scaled(annDur(pod, annDuration, defaultRunTime)) - now.Sub(start.Time)
	if left > 0 {
		k.after(key, left)
		return nil
	}
	code := exitCode(pod)
	p := pod.DeepCopy()
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	p.Status.Phase = phase
	p.Status.ContainerStatuses = containerStatuses(pod, false, start, now, code, reason)
	setCond(p, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", now)
	setCond(p, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", now)
	setCond(p, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", now)
	_, err = k.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

func (k *kubelet) start(ctx context.Context, key string, pod *corev1.Pod, ns *nodeSpec, now metav1.Time) error {
	p := pod.DeepCopy()
	ip := fmt.Sprintf("10.%d.%d.%d", 100+hash32(ns.ip)%150, hash32(string(pod.UID))%256, hash32(pod.Name)%253+2)
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = ns.ip
	p.Status.HostIPs = []corev1.HostIP{{IP: ns.ip}}
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.StartTime = &now
	p.Status.ContainerStatuses = containerStatuses(pod, true, now, now, 0, "")
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		setCond(p, t, corev1.ConditionTrue, "", now)
	}
	if _, err := k.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	for _, c := range pod.Spec.Containers {
		k.event(ctx, pod, "Started", "Started container "+c.Name)
	}
	k.after(key, k.scaled(annDur(pod, annDuration, defaultRunTime)))
	return nil
}

// event records a Normal event on the pod from the node's kubelet, as a
// real kubelet does when it starts or stops a container. A failed write is
// logged: events are best effort on a real cluster too.
func (k *kubelet) event(ctx context.Context, pod *corev1.Pod, reason, msg string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace,
			Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: reason, Message: msg, Type: corev1.EventTypeNormal, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source:              corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		ReportingController: "kubelet", ReportingInstance: pod.Spec.NodeName,
	}
	// A kubelet's events are what tests count (Started per pod): a
	// failed write (the API server busy) is tried again a few times.
	var err error
	for try := 0; try < 5 && ctx.Err() == nil; try++ {
		if _, err = k.cs.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err == nil {
			return
		}
		time.Sleep(time.Duration(100*(try+1)) * time.Millisecond)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Printf("aiq-realcluster: kubelet: event %s on %s/%s: %v\n", reason, pod.Namespace, pod.Name, err)
	}
}

// terminate plays a kubelet's part in graceful deletion: the containers
// get SIGTERM and stop after their stop duration (or are killed at the
// end of the grace period), the pod gets its terminal status, and then
// the kubelet deletes it for good with grace 0 and a UID precondition.
func (k *kubelet) terminate(ctx context.Context, key string, pod *corev1.Pod, now metav1.Time) error {
	if !terminal(pod) {
		grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 30)) * time.Second
		stop := k.scaled(annDur(pod, annStop, 0))
		killed := false
		if stop > grace {
			stop, killed = grace, true
		}
		// DeletionTimestamp is when the grace period ends; it began grace before.
		began := pod.DeletionTimestamp.Add(-grace)
		if left := stop - now.Sub(began); left > 0 {
			if !k.stopping(key) {
				for _, c := range pod.Spec.Containers {
					k.event(ctx, pod, "Killing", "Stopping container "+c.Name)
				}
			}
			k.after(key, left)
			return nil
		}
		p := pod.DeepCopy()
		start := now
		if pod.Status.StartTime != nil {
			start = *pod.Status.StartTime
		}
		code, reason := int32(143), "Error" // exited on SIGTERM
		if killed {
			code = 137
		}
		if pod.Status.Phase == corev1.PodRunning {
			p.Status.ContainerStatuses = containerStatuses(pod, false, start, now, code, reason)
		}
		p.Status.Phase = corev1.PodFailed
		setCond(p, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", now)
		setCond(p, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", now)
		setCond(p, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", now)
		if _, err := k.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if len(pod.Finalizers) > 0 {
		return nil // the pod object goes once its finalizers are removed; the kubelet is done
	}
	uid := types.UID(pod.UID)
	err := k.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
