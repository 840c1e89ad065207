/**
 * The manifest-driven launch: the NATS StatefulSet, the partition StatefulSets and the coordinator Deployment of
 * deploy/kubernetes/ started as local processes, each container's command, arguments and environment as the
 * manifest gives them, so that the manifests and the binaries cannot drift apart. What a kubelet would provide is
 * emulated: each pod gets a root directory holding its mount paths (ConfigMaps laid out as the kubelet lays them
 * out, with `..data` symlinks; subPath files copied in; claims and emptyDirs as directories), `$(VAR)` references and
 * the downward API (pod name, pod-index label) are resolved, and every container port and pod or Service name is
 * mapped to a free loopback port; init containers (`sh -c`) run before their pod's container. Then a write and reads
 * go through the coordinator's Service port, addressed by the Service's names (and refused by any other). The hosted gateway's StatefulSet is started the same way beside Redis's
 * Deployment (`redis-server` stands in for its image), with the silk-api-keys Secret filled as deploy/ tells an
 * operator to (a key from `silk keys create`): its init container copies the keys in, its probes pass, a request
 * without a key is refused and one with the key is served, rate-limited through Redis.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { request as httpRequest } from "node:http";
import { connect as connectTcp } from "node:net";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, NATS_SERVER_BINARY } from "../../cluster/nats/servers.js";
import { runSilk, spawnSilk, temporaryDirectory, removeTemporaryDirectories } from "../cli/helpers.js";
import { parse } from "yaml";
import { BASE_DIRECTORY, byKindAndName, loadBase, selects, services, workloads, type Container, type KubeObject, type Workload } from "./manifests.js";

const objects = loadBase();
const root = mkdtempSync(join(tmpdir(), "silk-deploy-launch-"));
const running: Running[] = [];
const STARTUP_MS_MAX = 120_000;
/** Secret keys the test fills as an operator would (the base ships placeholders), by Secret name. */
const secretValues = new Map<string, Record<string, string>>();

interface Pod {
  readonly name: string;
  readonly workload: Workload;
  readonly labels: Record<string, string>;
  readonly directory: string;
  /** containerPort → loopback port. */
  readonly ports: Map<number, number>;
}

const pods: Pod[] = [];
/** The first test's user, read again once a partition was added. */
let firstUser: string | undefined;

async function podsOf(workload: Workload): Promise<Pod[]> {
  const count = workload.spec.replicas ?? 1;
  const made: Pod[] = [];
  for (let index = 0; index < count; index += 1) {
    const name = workload.kind === "StatefulSet" ? `${workload.metadata.name}-${index}` : `${workload.metadata.name}-0`;
    const ports = new Map<number, number>();
    for (const container of workload.spec.template.spec.containers) for (const port of container.ports ?? []) ports.set(port.containerPort, await freePort());
    const labels = { ...workload.spec.template.metadata.labels, "apps.kubernetes.io/pod-index": String(index), "statefulset.kubernetes.io/pod-name": name };
    made.push({ name, workload, labels, directory: join(root, name), ports });
  }
  pods.push(...made);
  return made;
}

/** Rewrites what a pod reads: its mount paths into its directory, DNS names and listen addresses to loopback ports. */
function localize(text: string, pod: Pod, container: Container): string {
  const mountPaths = (container.volumeMounts ?? []).map((mount) => mount.mountPath).sort((a, b) => b.length - a.length);
  const escape = (value: string): string => value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  if (mountPaths.length > 0) {
    const pattern = new RegExp(`(?<![\\w./-])(${mountPaths.map(escape).join("|")})(?=$|[/"'\\s,\\]])`, "g");
    text = text.replace(pattern, (path) => join(pod.directory, path));
  }
  text = text.replace(/0\.0\.0\.0:(\d+)/g, (_, port: string) => `127.0.0.1:${pod.ports.get(Number(port)) ?? port}`);
  return text.replace(/\b([a-z0-9-]+)(?:\.([a-z0-9-]+))?:(\d+)\b/g, (whole, host: string, domain: string | undefined, port: string) => {
    const target = domain === undefined ? serviceTarget(host, Number(port)) : pods.find((candidate) => candidate.name === host && candidate.workload.spec.serviceName === domain)?.ports.get(Number(port));
    return target === undefined ? whole : `127.0.0.1:${target}`;
  });
}

/** A Service's port, resolved to the loopback port of the first pod it selects. */
function serviceTarget(name: string, port: number): number | undefined {
  const service = services(objects).find((candidate) => candidate.metadata.name === name);
  const servicePort = service?.spec.ports.find((candidate) => candidate.port === port);
  if (service === undefined || servicePort === undefined) return undefined;
  const pod = pods.find((candidate) => selects(service.spec.selector ?? {}, candidate.labels));
  const container = pod?.workload.spec.template.spec.containers[0];
  const target = servicePort.targetPort ?? servicePort.port;
  const containerPort = container?.ports?.find((candidate) => candidate.containerPort === target || candidate.name === target)?.containerPort;
  return containerPort === undefined ? undefined : pod!.ports.get(containerPort);
}

/** Writes a ConfigMap or Secret volume as the kubelet does: files are symlinks into `..data`, a symlinked directory. */
function materializeVolume(source: KubeObject, target: string, pod: Pod, container: Container): void {
  const timestamped = join(target, "..2026_01_01_00_00_00.000000000");
  mkdirSync(timestamped, { recursive: true });
  const entries = { ...(source.data ?? {}), ...(source.stringData ?? {}), ...(secretValues.get(source.metadata.name) ?? {}) };
  for (const [key, value] of Object.entries(entries)) writeFileSync(join(timestamped, key), localize(value, pod, container));
  symlinkSync("..2026_01_01_00_00_00.000000000", join(target, "..data"));
  for (const key of Object.keys(entries)) symlinkSync(join("..data", key), join(target, key));
}

function mountVolumes(pod: Pod, container: Container): void {
  const volumes = pod.workload.spec.template.spec.volumes ?? [];
  const mounts = [...(container.volumeMounts ?? [])].sort((a, b) => a.mountPath.length - b.mountPath.length);
  for (const mount of mounts) {
    const target = join(pod.directory, mount.mountPath);
    const volume = volumes.find((candidate) => candidate.name === mount.name);
    const sourceName = volume?.configMap?.name ?? volume?.secret?.secretName;
    if (sourceName === undefined) {
      mkdirSync(target, { recursive: true }); // a claim from volumeClaimTemplates, or an emptyDir
      continue;
    }
    const source = byKindAndName<KubeObject>(objects, volume?.configMap !== undefined ? "ConfigMap" : "Secret", sourceName);
    if (mount.subPath !== undefined) {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, localize((source.data ?? source.stringData ?? {})[mount.subPath], pod, container)); // a bind mount of one file
    } else {
      materializeVolume(source, target, pod, container);
    }
  }
}

/** The container's environment: plain values, the downward API's pod name and labels, and envFrom Secrets. */
function environment(pod: Pod, container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    const secret = source.secretRef === undefined ? undefined : byKindAndName<KubeObject>(objects, "Secret", source.secretRef.name);
    Object.assign(env, secret?.stringData ?? {});
  }
  for (const variable of container.env ?? []) {
    const field = variable.valueFrom?.fieldRef?.fieldPath;
    const label = field === undefined ? undefined : /^metadata\.labels\['(.+)'\]$/.exec(field)?.[1];
    const value = variable.value ?? (field === "metadata.name" ? pod.name : label !== undefined ? pod.labels[label] : undefined);
    if (value === undefined) throw new Error(`${pod.name}: env ${variable.name} has a source this test does not emulate`);
    env[variable.name] = value;
  }
  return env;
}

/** Runs a pod's init containers, in order, to completion; only `sh -c <script>` has a local stand-in. */
function runInitContainers(pod: Pod): void {
  for (const init of pod.workload.spec.template.spec.initContainers ?? []) {
    mountVolumes(pod, init);
    const [shell, flag, script] = init.command ?? [];
    if (shell !== "sh" || flag !== "-c" || script === undefined) throw new Error(`${pod.name}: no local stand-in for init container ${init.name}`);
    const result = spawnSync("sh", ["-c", localize(script, pod, init)], { cwd: pod.directory, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`${pod.name}: init container ${init.name} failed (${result.status}): ${result.stderr}`);
  }
}

interface Running {
  readonly name: string;
  readonly child: ChildProcess;
  readonly output: string[];
}

function start(pod: Pod): Running {
  const container = pod.workload.spec.template.spec.containers[0];
  mkdirSync(pod.directory, { recursive: true });
  runInitContainers(pod);
  mountVolumes(pod, container);
  const env = environment(pod, container);
  // Kubernetes expands $(VAR) in command and args from the container's environment.
  const args = (container.args ?? []).map((arg) => localize(arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_, name: string) => env[name] ?? `$(${name})`), pod, container));
  const localArgs = args.map((arg, index) => {
    const flag = args[index - 1];
    if ((flag === "--host" || flag === "--health-host") && arg === "0.0.0.0") return "127.0.0.1";
    return flag === "--port" || flag === "--health-port" ? String(pod.ports.get(Number(arg)) ?? arg) : arg;
  });
  let child: ChildProcess;
  if (container.command?.[0] === "silk") {
    child = spawnSilk(localArgs, { cwd: pod.directory, env });
  } else if (container.command === undefined && container.image.startsWith("nats:")) {
    child = spawn(NATS_SERVER_BINARY, localArgs, { cwd: pod.directory, env: { ...process.env, ...env } });
  } else if (container.command === undefined && container.image.startsWith("redis:")) {
    // The image's entrypoint is redis-server; its port is the container's, mapped, on loopback.
    const port = container.ports![0].containerPort;
    child = spawn("redis-server", [...localArgs, "--port", String(pod.ports.get(port)), "--bind", "127.0.0.1"], { cwd: pod.directory, env: { ...process.env, ...env } });
  } else {
    throw new Error(`${pod.name}: no local stand-in for image ${container.image} with command ${JSON.stringify(container.command)}`);
  }
  const output: string[] = [];
  child.stdout?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const entry = { name: pod.name, child, output };
  running.push(entry);
  return entry;
}

/** Waits for a Job's container to exit and returns its exit code; it then no longer counts as a running process. */
async function completion(job: Running, deadline: number): Promise<number> {
  while (job.child.exitCode === null && job.child.signalCode === null) {
    const exited = running.find((process) => process !== job && process.child.exitCode !== null);
    if (exited !== undefined) throw new Error(`${exited.name} exited (${exited.child.exitCode}): ${exited.output.join("").slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`${job.name} did not finish in time: ${job.output.join("").slice(-2000)}`);
    await sleep(250);
  }
  running.splice(running.indexOf(job), 1);
  return job.child.exitCode ?? -1;
}

/**
 * The StatefulSet (and what it names) of partition `index`, copied from another partition's as deploy/README.md tells
 * an operator to: its name, its silk-partition labels and selectors, and its `--partition`.
 */
function partitionStatefulSet(from: Workload, index: number): Workload {
  const previous = /^silk-partition-(\d+)$/.exec(from.metadata.name)![1];
  const text = JSON.stringify(from)
    .replaceAll(`"silk-partition-${previous}"`, `"silk-partition-${index}"`)
    .replaceAll(`"silk-partition":"${previous}"`, `"silk-partition":"${index}"`)
    .replaceAll(`"--partition","${previous}"`, `"--partition","${index}"`);
  return JSON.parse(text) as Workload;
}

/** Replaces an object of the base by a new version (an operator's `kubectl apply` of an edited manifest). */
function apply(object: KubeObject): void {
  const index = objects.findIndex((candidate) => candidate.kind === object.kind && candidate.metadata.name === object.metadata.name);
  if (index < 0) throw new Error(`no ${object.kind} ${object.metadata.name} to replace`);
  objects[index] = object;
}

async function httpGetOk(port: number, path: string, deadline: number): Promise<void> {
  let last = "";
  while (Date.now() < deadline) {
    const exited = running.find((process) => process.child.exitCode !== null);
    if (exited !== undefined) throw new Error(`${exited.name} exited (${exited.child.exitCode}): ${exited.output.join("").slice(-2000)}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      if (response.status === 200) return;
      last = `status ${response.status}`;
    } catch (cause) {
      last = (cause as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`GET ${path} on ${port} did not answer 200: ${last}`);
}

function probePort(pod: Pod, container: Container, port: number | string): number {
  const containerPort = container.ports!.find((candidate) => candidate.containerPort === port || candidate.name === port)!.containerPort;
  return pod.ports.get(containerPort)!;
}

/** Waits until a TCP port accepts a connection (a tcpSocket probe). */
async function tcpOk(port: number, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connectTcp(port, "127.0.0.1", () => (socket.destroy(), resolve(true)));
      socket.on("error", () => resolve(false));
    });
    if (accepted) return;
    await sleep(250);
  }
  throw new Error(`port ${port} did not accept connections in time`);
}

afterAll(async () => {
  for (const process of [...running].reverse()) process.child.kill("SIGTERM");
  const deadline = Date.now() + 5_000;
  while (running.some((process) => process.child.exitCode === null && process.child.signalCode === null) && Date.now() < deadline) await sleep(100);
  for (const process of running) if (process.child.exitCode === null && process.child.signalCode === null) process.child.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
  removeTemporaryDirectories();
}, 30_000);

describe("deploy/kubernetes launched as local processes", () => {
  it("starts NATS, the partitions and the coordinator from their manifests, and serves a write and reads", async () => {
    const nats = byKindAndName<Workload>(objects, "StatefulSet", "silk-nats");
    const partitions = workloads(objects).filter((workload) => workload.spec.template.spec.containers[0].args?.[0] === "partition");
    const coordinator = byKindAndName<Workload>(objects, "Deployment", "silk-coordinator");
    const natsPods = await podsOf(nats);
    const partitionPods = (await Promise.all(partitions.map(podsOf))).flat();
    const [coordinatorPod] = await podsOf(coordinator);
    for (const pod of [...natsPods, ...partitionPods, coordinatorPod]) start(pod);
    const deadline = Date.now() + STARTUP_MS_MAX;

    // The probes as the kubelet would run them: NATS's readiness and liveness paths, every replica's, then the coordinator's.
    for (const pod of natsPods) {
      const container = nats.spec.template.spec.containers[0];
      for (const probe of [container.readinessProbe!, container.livenessProbe!]) await httpGetOk(probePort(pod, container, probe.httpGet!.port), probe.httpGet!.path, deadline);
    }
    for (const pod of partitionPods) {
      const container = pod.workload.spec.template.spec.containers[0];
      for (const probe of [container.readinessProbe!, container.livenessProbe!]) await httpGetOk(probePort(pod, container, probe.httpGet!.port), probe.httpGet!.path, deadline);
    }
    const server = coordinator.spec.template.spec.containers[0];
    await httpGetOk(probePort(coordinatorPod, server, server.readinessProbe!.httpGet!.port), server.readinessProbe!.httpGet!.path, deadline);

    // Through the coordinator's Service, as a client in the cluster would reach it.
    const service = byKindAndName<KubeObject>(objects, "Service", "silk-coordinator") as unknown as { metadata: { name: string }; spec: { ports: { port: number }[] } };
    const port = serviceTarget(service.metadata.name, service.spec.ports[0].port)!;
    // Addressed by the Service's names (its Host header), which the coordinator answers only as --allowed-hosts.
    const servicePort = service.spec.ports[0].port;
    const post = (path: string, body: unknown, host: string): Promise<{ status: number; json: Record<string, unknown> }> =>
      new Promise((resolve, reject) => {
        const text = JSON.stringify(body);
        const outgoing = httpRequest(`http://127.0.0.1:${port}${path}`, { method: "POST", headers: { host, "content-type": "application/json", "content-length": Buffer.byteLength(text) } });
        outgoing.on("error", reject);
        outgoing.on("response", (response) => {
          let received = "";
          response.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, json: JSON.parse(received) as Record<string, unknown> }));
        });
        outgoing.end(text);
      });
    const created = await post("/CreateUser", { handle: "ada", name: "Ada", age: 36 }, `${service.metadata.name}:${servicePort}`);
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const user = created.json.user as { id: string; name: string };
    expect(user.name).toBe("Ada");
    const read = await post("/GetUser", { id: user.id }, `${service.metadata.name}.default.svc.cluster.local:${servicePort}`);
    expect(read.status, JSON.stringify(read.json)).toBe(200);
    expect((read.json.user as { handle: string }).handle).toBe("ada");
    // Any other name is what a DNS-rebinding page would send.
    const rebound = await post("/GetUser", { id: user.id }, `evil.example:${servicePort}`);
    expect(rebound.status).toBe(403);
    expect(rebound.json.error).toBe("host_not_allowed");
    firstUser = user.id;
  }, STARTUP_MS_MAX + 60_000);

  it("adds a partition: cluster.json raised, a StatefulSet for the next index, then the add-partition Job; writes land on it and reads answer all data", async () => {
    expect(firstUser, "the first test's user").toBeDefined();
    // The operator's steps (deploy/README.md, "Adding a partition"): the silk-cluster ConfigMap raised to one more
    // partition, and a copy of the last partition StatefulSet with the next index. Its pods wait for the carve.
    const configMap = byKindAndName<KubeObject>(objects, "ConfigMap", "silk-cluster");
    const manifest = JSON.parse(configMap.data!["cluster.json"]) as { partitions: number };
    const next = manifest.partitions;
    apply({ ...configMap, data: { "cluster.json": JSON.stringify({ ...manifest, partitions: next + 1 }, null, 2) } });
    const added = partitionStatefulSet(byKindAndName<Workload>(objects, "StatefulSet", `silk-partition-${next - 1}`), next);
    expect(added.spec.template.spec.containers[0].args).toContain(String(next));
    const addedPods = await podsOf(added);
    for (const pod of addedPods) start(pod);

    // The Job, as `kubectl create -f deploy/kubernetes/jobs/add-partition.yaml` runs it: one pod, to completion.
    const job = parse(readFileSync(join(BASE_DIRECTORY, "jobs", "add-partition.yaml"), "utf8")) as Workload & { metadata: { generateName: string } };
    const jobArgs = job.spec.template.spec.containers[0].args!;
    expect(jobArgs[jobArgs.indexOf("--partition") + 1], "the Job's --partition is the next partition").toBe(String(next));
    const [jobPod] = await podsOf({ ...job, metadata: { ...job.metadata, name: `${job.metadata.generateName}launch` }, spec: { ...job.spec, replicas: 1 } });
    const deadline = Date.now() + STARTUP_MS_MAX;
    const jobRun = start(jobPod);
    const code = await completion(jobRun, deadline);
    const jobOutput = jobRun.output.join("");
    expect(code, jobOutput).toBe(0);
    const carved = /partition (\d+) \(IDs (\d+)\.\.(\d+)\) serves/.exec(jobOutput);
    expect(carved, jobOutput).not.toBeNull();
    expect(Number(carved![1])).toBe(next);
    const [first, last] = [BigInt(carved![2]), BigInt(carved![3])];

    // The new replicas' probes as the kubelet runs them: startup, then readiness and liveness.
    for (const pod of addedPods) {
      const container = added.spec.template.spec.containers[0];
      for (const probe of [container.startupProbe!, container.readinessProbe!, container.livenessProbe!]) await httpGetOk(probePort(pod, container, probe.httpGet!.port), probe.httpGet!.path, deadline);
    }

    // New records go round-robin over the partitions: within one round, one lands on the new partition.
    const port = serviceTarget("silk-coordinator", 6969)!;
    const post = async (path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    };
    const users: string[] = [];
    for (let index = 0; index < 2 * (next + 1); index += 1) {
      const created = await post("/CreateUser", { handle: `user${index}`, name: `User ${index}`, age: 20 + index });
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      users.push((created.json.user as { id: string }).id);
    }
    const onNew = users.filter((id) => BigInt(id) >= first && BigInt(id) <= last);
    expect(onNew.length, `IDs ${users.join(", ")}; the new partition's ${first}..${last}`).toBeGreaterThan(0);
    const offNew = users.filter((id) => !onNew.includes(id));

    // Reads answer every record, old and new: each user, and an edge from an old partition's user to the new one's.
    for (const [index, id] of users.entries()) {
      const read = await post("/GetUser", { id });
      expect(read.status, JSON.stringify(read.json)).toBe(200);
      expect((read.json.user as { handle: string }).handle).toBe(`user${index}`);
    }
    expect(((await post("/GetUser", { id: firstUser })).json.user as { handle: string }).handle).toBe("ada");
    for (const follower of [firstUser!, offNew[0]]) {
      const followed = await post("/Follow", { follower, followed: onNew[0], since: "2026-11-26" });
      expect(followed.status, JSON.stringify(followed.json)).toBe(200);
    }
    const followers = await post("/FollowersOf", { id: onNew[0] });
    expect(followers.status, JSON.stringify(followers.json)).toBe(200);
    expect((followers.json.followers as { id: string }[]).map((user) => user.id).sort()).toEqual([firstUser!, offNew[0]].sort());
  }, STARTUP_MS_MAX + 90_000);

  it("starts Redis and the hosted gateway from their manifests (init container included), and serves a keyed request", async () => {
    // The operator's step (deploy/kubernetes/secrets.yaml): a key from `silk keys create`, its keys.json in the Secret.
    const keysDirectory = temporaryDirectory();
    const created = await runSilk(["keys", "create", "--data", keysDirectory, "--name", "launch"]);
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    secretValues.set("silk-api-keys", { "keys.json": readFileSync(join(keysDirectory, "gateway", "keys.json"), "utf8") });

    const redis = byKindAndName<Workload>(objects, "Deployment", "silk-redis");
    const gateway = byKindAndName<Workload>(objects, "StatefulSet", "silk-gateway");
    const [redisPod] = await podsOf(redis);
    const [gatewayPod] = await podsOf(gateway);
    const deadline = Date.now() + STARTUP_MS_MAX;
    start(redisPod);
    const redisContainer = redis.spec.template.spec.containers[0];
    await tcpOk(probePort(redisPod, redisContainer, redisContainer.livenessProbe!.tcpSocket!.port), deadline);
    start(gatewayPod);
    const container = gateway.spec.template.spec.containers[0];
    for (const probe of [container.startupProbe!, container.readinessProbe!, container.livenessProbe!]) await httpGetOk(probePort(gatewayPod, container, probe.httpGet!.port), probe.httpGet!.path, deadline);

    const service = byKindAndName<KubeObject>(objects, "Service", "silk-gateway") as unknown as { metadata: { name: string }; spec: { ports: { port: number }[] } };
    const port = serviceTarget(service.metadata.name, service.spec.ports[0].port)!;
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    };
    const refused = await post("/CreateUser", { handle: "bob", name: "Bob", age: 41 });
    expect([refused.status, refused.json.error]).toEqual([401, "unauthorized"]);
    const written = await post("/CreateUser", { handle: "bob", name: "Bob", age: 41 }, { authorization: `Bearer ${key}` });
    expect(written.status, JSON.stringify(written.json)).toBe(200);
    const user = written.json.user as { id: string };
    const read = await post("/GetUser", { id: user.id }, { "x-api-key": key });
    expect(read.status, JSON.stringify(read.json)).toBe(200);
    expect((read.json.user as { handle: string }).handle).toBe("bob");
  }, STARTUP_MS_MAX + 60_000);
});
