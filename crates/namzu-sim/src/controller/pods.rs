//! The pods: how the controller creates a Sandbox's pod and how the scheduler and kubelet carry it (pulls, starts, crashes, probes, termination).

use super::*;

pub(super) fn running_conditions(pod: &Value, cond: &dyn Fn(&str, &str, &str, &str) -> Value) -> Vec<Value> {
    let not_suspended = cond("Suspended", "False", "NotSuspended", "Sandbox is not suspended");
    let phase = s(pod, "/status/phase");
    let ready = match phase {
        "Failed" => cond(
            "Ready",
            "False",
            "PodFailed",
            &format!("Pod {} failed", s(pod, "/metadata/name")),
        ),
        "Succeeded" => cond("Ready", "False", "PodSucceeded", "Pod succeeded"),
        _ if pod.pointer("/metadata/deletionTimestamp").is_some() => {
            cond("Ready", "False", "DependenciesNotReady", "Pod is terminating")
        }
        "Running" if pod_ready(pod) => cond("Ready", "True", "DependenciesReady", "Pod is Ready; Service Exists"),
        "Running" => cond("Ready", "False", "DependenciesNotReady", "Pod is Running but not Ready"),
        _ => cond(
            "Ready",
            "False",
            "DependenciesNotReady",
            &format!("Pod is {}", if phase.is_empty() { "Pending" } else { phase }),
        ),
    };
    let mut conds = vec![ready, not_suspended];
    if matches!(phase, "Failed" | "Succeeded") {
        conds.push(cond(
            "Finished",
            "True",
            &format!("Pod{phase}"),
            "Pod reached a terminal phase",
        ));
    }
    conds
}

impl Controller {
    pub(super) fn create_pod(
        &mut self,
        store: &mut Store,
        sbx: &Value,
        knobs: &Knobs,
        now: DateTime<Utc>,
        settle: bool,
    ) -> Value {
        let (ns, name) = (s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        let template = sbx.pointer("/spec/podTemplate").cloned().unwrap_or(json!({}));
        let mut labels = template.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.retain(|k, _| !k.starts_with("agents.x-k8s.io/") && !k.starts_with("extensions.agents.x-k8s.io/"));
            l.insert("agents.x-k8s.io/sandbox-name-hash".into(), json!(name_hash(name)));
        }
        let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
        let vcts = sbx
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !vcts.is_empty() && spec.is_object() {
            let mut volumes = spec
                .get("volumes")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for v in &vcts {
                let vn = s(v, "/metadata/name");
                volumes.push(json!({"name":vn,"persistentVolumeClaim":{"claimName":format!("{vn}-{name}")}}));
            }
            spec["volumes"] = json!(volumes);
        }
        // a pod someone else made under the Sandbox's name carries that maker's labels, not the
        // controller's
        let (owners, labels) = if knobs.foreign_pod {
            (
                json!([{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"someone-else","uid":"00000000-0000-4000-8000-00000000f0e1","controller":true}]),
                json!({"app": "someone-else"}),
            )
        } else {
            (json!([owner_ref(sbx)]), labels)
        };
        let ready_delay = knobs
            .ready_delay_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(self.timing.ready_delay);
        // a settled scenario's pod was made when its workspace last woke (the resume's
        // mode-changed stamp, else the Sandbox's creation), a second after, as a controller
        // would: its start-up waterfall counts from there and has ended by now
        let running = s(sbx, "/spec/operatingMode") != "Suspended";
        let woke = [
            "/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at",
            "/metadata/creationTimestamp",
        ]
        .iter()
        // a Suspended one's stamp is its suspend: its pod is from before
        .skip(usize::from(!running))
        .find_map(|p| sbx.pointer(p).and_then(Value::as_str))
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc) + Duration::seconds(1));
        let born = match (settle, woke) {
            (true, Some(t)) => t.min(now - ready_delay),
            (true, None) => now - ready_delay,
            (false, _) => now,
        };
        let pod = json!({"metadata":{"name":name,"namespace":ns,"labels":labels,
            "annotations": template.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
            "ownerReferences":owners, "creationTimestamp": k8s_time(born)},
            "spec":spec,
            "status":{"phase":"Pending"}});
        let created = store.create(&PODS, pod, &k8s_time(now)).expect("no pod of that name");
        let uid = s(&created, "/metadata/uid").to_string();
        self.started.insert(uid, born);
        if !knobs.foreign_pod {
            self.announce(
                store,
                sbx,
                "SandboxPodCreated",
                &format!("Created pod {name}"),
                "Normal",
                &k8s_time(born),
            );
        }
        created
    }
}

/// One event about a pod: reason, message, type, reporter, when.
type PodEvent = (&'static str, String, &'static str, Reporter, String);

/// A pod condition as the kubelet writes it; an empty reason or message is left out.
fn pod_condition(type_: &str, status: &str, reason: &str, message: &str, when: &str) -> Value {
    let mut c = json!({"type":type_,"status":status,"lastTransitionTime":when,"lastProbeTime":null});
    if !reason.is_empty() {
        c["reason"] = json!(reason);
    }
    if !message.is_empty() {
        c["message"] = json!(message);
    }
    c
}

const NODE: &str = "sim-node-1";

/// What one pod's start-up is made of, read once: the start-up waterfall is
/// created → scheduled → pulled → started → ready.
struct StartUp {
    uid: String,
    name: String,
    ns: String,
    image: String,
    containers: Vec<String>,
    started: DateTime<Utc>,
    /// Bound to a node (the `schedule_delay_ms` knob after `started`; else at once).
    scheduled: DateTime<Utc>,
    pulled: DateTime<Utc>,
    ready_at: DateTime<Utc>,
    now: DateTime<Utc>,
    now_s: String,
    /// The container started when the pod became ready, and stays started.
    started_at: String,
    /// The class the API server gave the pod at creation stays.
    qos: Value,
}

impl StartUp {
    fn base(&self, phase: &str) -> Value {
        json!({"phase":phase,"qosClass":self.qos})
    }

    fn not_ready(&self, reason: &str, when: &str) -> Vec<Value> {
        let msg = format!("containers with unready status: [{}]", self.containers.join(" "));
        let started = k8s_time(self.scheduled);
        vec![
            pod_condition("PodReadyToStartContainers", "True", "", "", when),
            pod_condition("Initialized", "True", "", "", &started),
            pod_condition("Ready", "False", reason, &msg, when),
            pod_condition("ContainersReady", "False", reason, &msg, when),
            pod_condition("PodScheduled", "True", "", "", &started),
        ]
    }

    fn scheduled(&self, next: &mut Value) {
        next["spec"]["nodeName"] = json!(NODE);
        next["status"]["hostIP"] = json!("10.0.0.11");
        next["status"]["hostIPs"] = json!([{"ip":"10.0.0.11"}]);
        next["status"]["startTime"] = json!(k8s_time(self.scheduled));
    }

    /// Each container's status in `state`, with its restarts so far.
    fn container_statuses(
        &self,
        restarts: &HashMap<(String, String), Restarts>,
        state: &dyn Fn(&str) -> Value,
        ready: bool,
        crashing: bool,
    ) -> Value {
        let (uid, image) = (&self.uid, &self.image);
        json!(self.containers.iter().map(|c| {
            let r = restarts.get(&(uid.clone(), c.to_string())).cloned();
            let mut state = state(c);
            if let (Some(r), Some(run)) = (&r, state.get_mut("running")) {
                run["startedAt"] = json!(r.started_at);
            }
            let mut st = json!({"name":c,"image":image,"imageID":format!("{image}@sha256:{}", name_hash(image).repeat(8)),
                "ready":ready,"restartCount":r.as_ref().map_or(0, |r| r.count),"started":ready,"state":state,
                "lastState": r.as_ref().map_or(json!({}), |r| json!({"terminated": r.last}))});
            if !crashing || ready {
                st["containerID"] = json!(format!("containerd://{}", container_id(uid, c, r.as_ref().map_or(0, |r| r.count))));
            }
            st
        }).collect::<Vec<_>>())
    }

    /// Scheduled and pulling: the events every pod the scheduler can place gets.
    fn placed_events(&self, events: &mut Vec<PodEvent>) {
        let (ns, name, image, at) = (&self.ns, &self.name, &self.image, k8s_time(self.scheduled));
        events.push((
            "Scheduled",
            format!("Successfully assigned {ns}/{name} to {NODE}"),
            "Normal",
            SCHEDULER,
            at.clone(),
        ));
        events.push(("Pulling", format!("Pulling image \"{image}\""), "Normal", KUBELET, at));
    }

    /// The image cannot be pulled: the pod waits in back-off.
    fn image_pull_failed(
        &self,
        reason: &str,
        restarts: &HashMap<(String, String), Restarts>,
        next: &mut Value,
        events: &mut Vec<PodEvent>,
    ) {
        let (image, started) = (&self.image, k8s_time(self.started));
        let msg = format!("Back-off pulling image \"{image}\"");
        self.scheduled(next);
        next["status"] = json!({"phase":"Pending","qosClass":self.qos,"hostIP":"10.0.0.11","hostIPs":[{"ip":"10.0.0.11"}],
            "podIP":"","startTime":started,"conditions":self.not_ready("ContainersNotReady", &started),
            "containerStatuses": self.container_statuses(restarts, &|_| json!({"waiting":{"reason":reason,"message":msg}}), false, true)});
        let fail_at = k8s_time((self.started + Duration::seconds(2)).min(self.now));
        events.push((
            "Failed",
            format!("Failed to pull image \"{image}\": rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {image}: not found"),
            "Warning", KUBELET, fail_at.clone()));
        events.push((
            "Failed",
            "Error: ErrImagePull".to_string(),
            "Warning",
            KUBELET,
            fail_at.clone(),
        ));
        events.push((
            "BackOff",
            format!("Back-off pulling image \"{image}\""),
            "Normal",
            KUBELET,
            fail_at.clone(),
        ));
        events.push(("Failed", format!("Error: {reason}"), "Warning", KUBELET, fail_at));
        if let Some(o) = next["status"].as_object_mut() {
            o.remove("podIP");
        }
    }

    /// Placed, its containers still being created.
    fn creating(&self, restarts: &HashMap<(String, String), Restarts>, next: &mut Value) {
        self.scheduled(next);
        let st = next["status"].clone();
        next["status"] = self.base("Pending");
        for k in ["hostIP", "hostIPs", "startTime"] {
            next["status"][k] = st[k].clone();
        }
        next["status"]["conditions"] = json!(self.not_ready("ContainersNotReady", &k8s_time(self.scheduled)));
        next["status"]["containerStatuses"] = self.container_statuses(
            restarts,
            &|_| json!({"waiting":{"reason":"ContainerCreating"}}),
            false,
            true,
        );
    }

    /// Pulled, then each container created and started.
    fn pulled_events(&self, events: &mut Vec<PodEvent>) {
        let (image, at) = (&self.image, k8s_time(self.pulled));
        let pull = self.pulled - self.scheduled;
        events.push((
            "Pulled",
            format!(
                "Successfully pulled image \"{image}\" in {} ({} including waiting). Image size: {} bytes.",
                go_duration(pull),
                go_duration(pull),
                image_size(image)
            ),
            "Normal",
            KUBELET,
            at.clone(),
        ));
        for c in &self.containers {
            events.push((
                "Created",
                format!("Created container: {c}"),
                "Normal",
                KUBELET,
                at.clone(),
            ));
            events.push((
                "Started",
                format!("Started container {c}"),
                "Normal",
                KUBELET,
                at.clone(),
            ));
        }
    }
}

impl Controller {
    /// Move a live pod along: scheduling, image pull, start, readiness — or the knob's trouble.
    pub(super) fn progress_pod(
        &mut self,
        store: &mut Store,
        sbx: &Value,
        pod: Value,
        knobs: &Knobs,
        now: DateTime<Utc>,
    ) -> Value {
        if pod.pointer("/metadata/deletionTimestamp").is_some()
            || matches!(s(&pod, "/status/phase"), "Failed" | "Succeeded")
        {
            return pod;
        }
        let p = self.start_up(&pod, knobs, now);
        let due = now >= p.ready_at;
        if !due {
            self.due(p.ready_at);
        }
        let mut next = pod.clone();
        let mut pod_events: Vec<PodEvent> = Vec::new();
        if knobs.unschedulable.is_none() && !knobs.pvc_pending && !knobs.disk_missing && now >= p.scheduled {
            if p.scheduled > p.started {
                // it waited for a node: the scheduler said so when it was made
                let msg = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.";
                pod_events.push((
                    "FailedScheduling",
                    msg.to_string(),
                    "Warning",
                    SCHEDULER,
                    k8s_time(p.started),
                ));
            }
            p.placed_events(&mut pod_events);
        }
        if let Some(msg) = &knobs.unschedulable {
            next["status"] = p.base("Pending");
            next["status"]["conditions"] =
                json!([pod_condition("PodScheduled", "False", "Unschedulable", msg, &p.now_s)]);
            pod_events.push(("FailedScheduling", msg.clone(), "Warning", SCHEDULER, p.now_s.clone()));
        } else if now < p.scheduled {
            // waiting for a node a while (the `schedule_delay_ms` knob)
            let msg = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.";
            next["status"] = p.base("Pending");
            next["status"]["conditions"] = json!([pod_condition(
                "PodScheduled",
                "False",
                "Unschedulable",
                msg,
                &k8s_time(p.started)
            )]);
            pod_events.push((
                "FailedScheduling",
                msg.to_string(),
                "Warning",
                SCHEDULER,
                k8s_time(p.started),
            ));
            self.due(p.scheduled);
        } else if knobs.pvc_pending || knobs.disk_missing {
            // waiting for its disks: the PVC's own events say why
            next["status"] = p.base("Pending");
        } else if let Some(reason) = &knobs.image_pull {
            p.image_pull_failed(reason, &self.restarts, &mut next, &mut pod_events);
        } else if !due {
            p.creating(&self.restarts, &mut next);
        } else {
            p.pulled_events(&mut pod_events);
            p.scheduled(&mut next);
            next["status"] = self.started_status(store, sbx, &pod, &p, knobs, &mut pod_events);
        }
        for (reason, message, type_, by, when) in pod_events {
            self.record(store, &pod, reason, &message, type_, by, &when);
        }
        // keep transition times of unchanged pod conditions
        keep_transition_times(
            &pod,
            next["status"]["conditions"]
                .as_array_mut()
                .map(Vec::as_mut_slice)
                .unwrap_or(&mut []),
        );
        if next != pod { store.update(&PODS, next) } else { pod }
    }

    /// The start-up facts of `pod`; the first sight of it starts its clock.
    fn start_up(&mut self, pod: &Value, knobs: &Knobs, now: DateTime<Utc>) -> StartUp {
        let uid = s(pod, "/metadata/uid").to_string();
        let ready_delay = knobs
            .ready_delay_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(self.timing.ready_delay);
        let started = *self.started.entry(uid.clone()).or_insert(now);
        let ms = |v: Option<u64>| Duration::milliseconds(v.unwrap_or(0) as i64);
        let scheduled = started + ms(knobs.schedule_delay_ms);
        let pull = knobs
            .pull_delay_ms
            .map_or(ready_delay * 3 / 5, |v| Duration::milliseconds(v as i64));
        let pulled = scheduled + pull;
        let ready_at = pulled + (ready_delay - ready_delay * 3 / 5) + ms(knobs.readiness_delay_ms);
        let started_at = pod
            .pointer("/status/containerStatuses/0/state/running/startedAt")
            .and_then(Value::as_str)
            .map_or_else(|| k8s_time(pulled), str::to_string);
        StartUp {
            name: s(pod, "/metadata/name").to_string(),
            ns: s(pod, "/metadata/namespace").to_string(),
            image: pod
                .pointer("/spec/containers/0/image")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            containers: pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map(|cs| cs.iter().map(|c| s(c, "/name").to_string()).collect())
                .unwrap_or_default(),
            uid,
            started,
            scheduled,
            pulled,
            ready_at,
            now,
            now_s: k8s_time(now),
            started_at,
            qos: pod.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort")),
        }
    }

    /// The status of a pod whose containers started: failed, crash-looping, or running and ready.
    fn started_status(
        &mut self,
        store: &mut Store,
        sbx: &Value,
        pod: &Value,
        p: &StartUp,
        knobs: &Knobs,
        pod_events: &mut Vec<PodEvent>,
    ) -> Value {
        let h = u32::from_str_radix(&name_hash(&p.uid), 16).unwrap_or(0);
        let ip = format!("10.244.{}.{}", (h >> 8) & 0xff, (h & 0xfd) + 2);
        let mut st = json!({"qosClass":p.qos,"hostIP":"10.0.0.11","hostIPs":[{"ip":"10.0.0.11"}],
            "podIP":ip,"podIPs":[{"ip":ip}],"startTime":k8s_time(p.scheduled)});
        if knobs.pod_failed {
            let now_s = &p.now_s;
            st["phase"] = json!("Failed");
            st["reason"] = json!("Error");
            st["message"] = json!("container agent exited with code 137 (OOMKilled)");
            st["conditions"] = json!(p.not_ready("PodFailed", now_s));
            st["containerStatuses"] = p.container_statuses(
                &self.restarts,
                &|_| {
                    json!({"terminated":{"reason":"OOMKilled","exitCode":137,
                    "startedAt":k8s_time(p.pulled),"finishedAt":now_s}})
                },
                false,
                false,
            );
            self.announce(
                store,
                sbx,
                "PodFailed",
                "Pod failed: container agent OOMKilled",
                "Warning",
                now_s,
            );
            self.seed_logs(pod, &p.containers, &p.image, p.pulled, Some(p.now));
        } else if knobs.crash_loop {
            self.crash_loop_status(pod, p, &mut st, pod_events);
        } else {
            let (pulled, started, ready_at) = (k8s_time(p.pulled), k8s_time(p.scheduled), k8s_time(p.ready_at));
            st["phase"] = json!("Running");
            st["conditions"] = json!([
                pod_condition("PodReadyToStartContainers", "True", "", "", &pulled),
                pod_condition("Initialized", "True", "", "", &started),
                pod_condition("Ready", "True", "", "", &ready_at),
                pod_condition("ContainersReady", "True", "", "", &ready_at),
                pod_condition("PodScheduled", "True", "", "", &started),
            ]);
            st["containerStatuses"] = p.container_statuses(
                &self.restarts,
                &|_| json!({"running":{"startedAt":p.started_at.clone()}}),
                true,
                false,
            );
            self.seed_logs(pod, &p.containers, &p.image, p.pulled, None);
        }
        st
    }

    /// A crash loop that has been going on: restarts, and the last run's fatal end.
    fn crash_loop_status(&mut self, pod: &Value, p: &StartUp, st: &mut Value, pod_events: &mut Vec<PodEvent>) {
        let (uid, name, ns, image, now) = (&p.uid, &p.name, &p.ns, &p.image, p.now);
        st["phase"] = json!("Running");
        st["conditions"] = json!(p.not_ready("ContainersNotReady", &k8s_time(p.started)));
        for c in &p.containers {
            self.restarts.entry((uid.clone(), c.clone())).or_insert_with(|| Restarts {
                count: 7,
                last: json!({"exitCode":1,"reason":"Error","startedAt":k8s_time(now - Duration::seconds(80)),
                    "finishedAt":k8s_time(now - Duration::seconds(74)),"containerID":format!("containerd://{}", container_id(uid, c, 6))}),
                started_at: k8s_time(now - Duration::seconds(80)),
            });
        }
        let restarts = |c: &str| self.restarts.get(&(uid.clone(), c.to_string())).cloned();
        st["containerStatuses"] = json!(p.containers.iter().map(|c| {
            let r = restarts(c);
            json!({"name":c,"image":image,"imageID":format!("{image}@sha256:{}", name_hash(image).repeat(8)),
                "ready":false,"started":false,"restartCount":r.as_ref().map_or(0, |r| r.count),
                "state":{"waiting":{"reason":"CrashLoopBackOff","message":format!("back-off 5m0s restarting failed container={c} pod={name}_{ns}({uid})")}},
                "lastState": r.as_ref().map_or(json!({}), |r| json!({"terminated": r.last})),
                "containerID": format!("containerd://{}", container_id(uid, c, r.as_ref().map_or(0, |r| r.count)))})
        }).collect::<Vec<_>>());
        for c in &p.containers {
            pod_events.push((
                "BackOff",
                format!("Back-off restarting failed container {c} in pod {name}_{ns}({uid})"),
                "Warning",
                KUBELET,
                p.now_s.clone(),
            ));
        }
        self.seed_crash_logs(pod, &p.containers, image);
    }
}

impl Controller {
    pub(super) fn start_termination(
        &mut self,
        store: &mut Store,
        sbx: &Value,
        mut pod: Value,
        knobs: &Knobs,
        now: DateTime<Utc>,
        settle: bool,
    ) {
        let grace = knobs
            .grace_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(self.timing.grace);
        // settling a scenario: a stuck pod was deleted long ago; a pod with its own grace is
        // still draining; any other is already gone
        let deadline = if settle && knobs.stuck_terminating {
            now - Duration::minutes(10)
        } else {
            now + grace
        };
        let gone = if settle && knobs.grace_ms.is_none() {
            now
        } else {
            now + grace
        };
        pod["metadata"]["deletionTimestamp"] = json!(k8s_time(deadline));
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(grace.num_seconds());
        self.gone_at.insert(s(&pod, "/metadata/uid").to_string(), gone);
        if !knobs.stuck_terminating {
            self.due(gone);
        }
        let name = s(&pod, "/metadata/name").to_string();
        let pod = store.update(&PODS, pod);
        let _ = sbx;
        self.record(
            store,
            &pod,
            "Killing",
            "Stopping container agent",
            "Normal",
            KUBELET,
            &k8s_time(now),
        );
        if settle && !knobs.stuck_terminating && knobs.grace_ms.is_none() {
            store.delete(&PODS, s(sbx, "/metadata/namespace"), &name, &k8s_time(now), &[]);
        }
    }
}

impl Controller {
    /// A pod being deleted that stays so while the knob holds (agent-sandbox v1.0 then reports
    /// Ready=False/PodTerminating).
    pub(super) fn keep_terminating(
        &mut self,
        store: &mut Store,
        mut pod: Value,
        knobs: &Knobs,
        now: DateTime<Utc>,
    ) -> Value {
        if pod.pointer("/metadata/deletionTimestamp").is_some() {
            return pod;
        }
        let grace = knobs
            .grace_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(Duration::hours(1));
        pod["metadata"]["deletionTimestamp"] = json!(k8s_time(now + grace));
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(grace.num_seconds());
        store.update(&PODS, pod)
    }
}

impl Controller {
    pub(super) fn delete_pod(&mut self, store: &mut Store, ns: &str, name: &str, now: &str) {
        if let Some(p) = store.delete(&PODS, ns, name, now, &[]) {
            let uid = s(&p, "/metadata/uid");
            self.started.remove(uid);
            self.gone_at.remove(uid);
            self.restarts.retain(|(u, _), _| u != uid);
            self.logs.forget_pod(ns, name);
        }
    }
}

impl Controller {
    /// The container restarts: its log rotates, the pod's status counts the restart and shows
    /// the run that ended (exit code 1, Error), followers of the old run are done.
    pub fn restart_container(&mut self, store: &mut Store, ns: &str, pod: &str, container: &str, now: DateTime<Utc>) {
        let Some(p) = store.get(&PODS, ns, pod).cloned() else {
            return;
        };
        let uid = s(&p, "/metadata/uid").to_string();
        let status = logs::container_status(&p, container).cloned().unwrap_or(json!({}));
        let key = (uid.clone(), container.to_string());
        let (count, started_at) = match self.restarts.get(&key) {
            Some(r) => (r.count, r.started_at.clone()),
            None => (
                status["restartCount"].as_u64().unwrap_or(0) as u32,
                status
                    .pointer("/state/running/startedAt")
                    .and_then(Value::as_str)
                    .map_or_else(|| k8s_time(now), str::to_string),
            ),
        };
        let now_s = k8s_time(now);
        let last = json!({"exitCode":1,"reason":"Error","startedAt":started_at,"finishedAt":now_s,
            "containerID":format!("containerd://{}", container_id(&uid, container, count))});
        self.restarts.insert(
            key,
            Restarts {
                count: count + 1,
                last: last.clone(),
                started_at: now_s.clone(),
            },
        );
        self.logs.restart(ns, pod, &uid, container);
        let mut next = p.clone();
        if let Some(cs) = next
            .pointer_mut("/status/containerStatuses")
            .and_then(Value::as_array_mut)
        {
            for c in cs.iter_mut().filter(|c| c["name"] == container) {
                c["restartCount"] = json!(count + 1);
                c["lastState"] = json!({"terminated": last});
                c["containerID"] = json!(format!("containerd://{}", container_id(&uid, container, count + 1)));
                if c.pointer("/state/running").is_some() {
                    c["state"] = json!({"running": {"startedAt": now_s}});
                }
            }
        }
        let next = store.update(&PODS, next);
        let image = status["image"].as_str().unwrap_or("").to_string();
        self.record(
            store,
            &next,
            "Pulled",
            &format!("Container image \"{image}\" already present on machine"),
            "Normal",
            KUBELET,
            &now_s,
        );
    }
}

/// A plausible, stable image size.
pub(super) fn image_size(image: &str) -> u64 {
    180_000_000 + u64::from_str_radix(&name_hash(image), 16).unwrap_or(0) % 400_000_000
}

/// A stable containerd id for a pod's container run.
pub(super) fn container_id(pod_uid: &str, container: &str, run: u32) -> String {
    let h = name_hash(&format!("{pod_uid}/{container}/{run}"));
    h.repeat(8)
}

pub(super) fn owner_ref(sbx: &Value) -> Value {
    json!({"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","name":s(sbx, "/metadata/name"),
        "uid":s(sbx, "/metadata/uid"),"controller":true,"blockOwnerDeletion":true})
}

pub(super) fn owns(sbx: &Value, pod: &Value) -> bool {
    let uid = s(sbx, "/metadata/uid");
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
}

pub(super) fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}
