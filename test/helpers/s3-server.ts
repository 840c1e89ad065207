/**
 * A real S3-compatible server for the object-storage suites (issue 17, docs/STORAGE.md "Test server"): Ceph's RADOS
 * Gateway (Debian's `radosgw`, 16.2) over a one-node Ceph cluster of its own (one monitor, one OSD on `memstore`, so
 * nothing touches the disk but the monitor's small store), all on loopback, started per suite and stopped by it.
 *
 * Why Ceph and not s3rver: the single-writer fence needs conditional writes (PUT with `If-None-Match: *` and
 * `If-Match: <etag>`) that the server decides atomically. RGW checks both inside the RADOS write itself (a
 * create-exclusive or a compare-extended-attribute guard on the object), and answers 412 when they fail; s3rver 3.7
 * ignores both headers, and its maintained forks need Node 22 or 24. `make s3-server` installs the packages; the
 * suites fail naming them where they are missing.
 *
 * Each daemon runs in the foreground as a child of the test process (`-f`) and is stopped by its own PID.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { freePort } from "../../cluster/nats/servers.js";

/** The Debian packages `make s3-server` installs. */
export const S3_SERVER_PACKAGES = "radosgw ceph-mon ceph-osd";
const BINARIES = ["/usr/bin/ceph-mon", "/usr/bin/ceph-osd", "/usr/bin/radosgw", "/usr/bin/radosgw-admin", "/usr/bin/ceph", "/usr/bin/ceph-authtool", "/usr/bin/monmaptool"];
/**
 * RGW creates its pools on its first start, each one a monitor proposal. The monitor batches proposals for
 * `paxos propose interval` (1 s by default), which made a start take about 15 s; at 50 ms it takes about 3 s (the
 * one monitor has no peers to batch for). The deadline stays generous for loaded machines.
 */
const START_DEADLINE_MS = 90_000;
const ACCESS_KEY_ID = "silktestaccess";
const SECRET_ACCESS_KEY = "silktestsecret";

export interface S3TestServer {
  /** http://127.0.0.1:<port> */
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  stop(): Promise<void>;
}


function configuration(directory: string, fsid: string, monitorPort: number, gatewayPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${monitorPort}
public addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = ${directory}/keyring
run dir = ${directory}/run
admin socket = ${directory}/run/$name.asok
log file = ${directory}/log/$name.log
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
paxos propose interval = 0.05
paxos min wait = 0.01
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 1
osd pool default pg autoscale mode = off
osd pool default pg num = 8
osd pool default pgp num = 8
mon max pg per osd = 1000
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 1073741824
[mon.a]
mon data = ${directory}/mon
[osd.0]
osd data = ${directory}/osd0
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${gatewayPort}
rgw data = ${directory}/rgw
rgw dns name = 127.0.0.1
`;
}

/** Runs a Ceph tool to completion; throws with its output when it fails. */
function run(command: string, args: readonly string[]): string {
  const result = spawnSync(command, args, { encoding: "utf8", timeout: 60_000 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (${result.status ?? result.signal}):\n${result.stdout}${result.stderr}`);
  return result.stdout;
}

async function waitFor(what: string, deadline: number, ready: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await ready())) {
    if (performance.now() > deadline) throw new Error(`the S3 test server: ${what} not ready within ${START_DEADLINE_MS} ms`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

/** Starts monitor, OSD and gateway; resolves once the gateway answers S3 requests with a user's keys. */
export async function startS3Server(): Promise<S3TestServer> {
  const missing = BINARIES.filter((binary) => !existsSync(binary));
  if (missing.length > 0) {
    throw new Error(`${missing.join(", ")} missing: install the packages (make s3-server, or apt-get install ${S3_SERVER_PACKAGES}); the object-storage suites need a real S3 server`);
  }
  const directory = mkdtempSync(join(tmpdir(), "silk-s3-"));
  const children: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    // Gateway first, monitor last, each by its own PID.
    for (const child of children.splice(0).reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGKILL");
      await exited;
    }
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    for (const folder of ["mon", "osd0", "run", "log", "rgw"]) mkdirSync(join(directory, folder));
    const fsid = randomUUID();
    const [monitorPort, gatewayPort] = [await freePort(), await freePort()];
    const conf = join(directory, "ceph.conf");
    writeFileSync(conf, configuration(directory, fsid, monitorPort, gatewayPort));
    const keyring = join(directory, "keyring");
    run("ceph-authtool", ["--create-keyring", keyring, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"]);
    run("ceph-authtool", [keyring, "--gen-key", "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mgr", "allow *"]);
    run("ceph-authtool", [keyring, "--gen-key", "-n", "osd.0", "--cap", "mon", "allow profile osd", "--cap", "osd", "allow *", "--cap", "mgr", "allow profile osd"]);
    run("ceph-authtool", [keyring, "--gen-key", "-n", "client.rgw", "--cap", "mon", "allow rw", "--cap", "osd", "allow rwx"]);
    const monmap = join(directory, "monmap");
    run("monmaptool", ["--create", "--addv", "a", `[v2:127.0.0.1:${monitorPort}]`, "--fsid", fsid, monmap]);
    run("ceph-mon", ["-c", conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", keyring]);
    const deadline = performance.now() + START_DEADLINE_MS;
    const daemon = (command: string, args: readonly string[]): void => {
      children.push(spawn(command, ["-f", "-c", conf, ...args], { stdio: "ignore" }));
    };
    daemon("ceph-mon", ["-i", "a"]);
    const osdUuid = randomUUID();
    await waitFor("the monitor", deadline, () => spawnSync("ceph", ["-c", conf, "--connect-timeout", "5", "osd", "new", osdUuid], { encoding: "utf8" }).status === 0);
    run("ceph-osd", ["-c", conf, "-i", "0", "--mkfs", "--osd-uuid", osdUuid]);
    daemon("ceph-osd", ["-i", "0"]);
    await waitFor("the OSD", deadline, () => /1 up/.test(run("ceph", ["-c", conf, "osd", "stat"])));
    daemon("radosgw", ["-n", "client.rgw"]);
    const endpoint = `http://127.0.0.1:${gatewayPort}`;
    await waitFor("the gateway", deadline, async () => {
      try {
        return (await fetch(endpoint)).status === 200;
      } catch {
        return false;
      }
    });
    run("radosgw-admin", ["-c", conf, "-n", "client.admin", "user", "create", "--uid=silk", "--display-name=silk", `--access-key=${ACCESS_KEY_ID}`, `--secret-key=${SECRET_ACCESS_KEY}`]);
    return { endpoint, region: "us-east-1", credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY }, stop };
  } catch (cause) {
    await stop();
    throw cause;
  }
}

/** Creates a bucket on the test server (a suite's own, made once in its beforeAll). */
export async function createBucket(server: S3TestServer, bucket: string): Promise<void> {
  const client = new S3Client({ endpoint: server.endpoint, region: server.region, credentials: server.credentials, forcePathStyle: true });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
}
