import subprocess, time, json
import harness
from harness import get, admin_route
def test_x(make_gateway, upstream, tmp_path):
    n = 100000
    lines = ["consumers:"]
    for i in range(n):
        lines += ["  - username: u%d" % i, "    plugins:", "      key-auth:", "        key: key-%d" % i]
    f = tmp_path / "c.yaml"
    f.write_text("\n".join(lines) + "\n#END\n")
    gw = make_gateway(admin=True, start=False)
    gw.write_config()
    t0 = time.time()
    p = subprocess.run([harness.SLUICE_BIN, "config", "load", "-c", gw.config_path, str(f)], capture_output=True, text=True, timeout=600)
    print("LOAD", p.returncode, time.time() - t0, p.stderr[-300:])
    t0 = time.time()
    gw.start(write=False)
    print("START", time.time() - t0)
    assert gw.admin("PUT", "/routes/1", admin_route("/k", upstream, plugins={"key-auth": {}})).status == 201
    assert get(gw.port, "/k", headers=[("apikey", "key-99999")]).status == 200
    for j in range(3):
        t0 = time.time()
        r = gw.admin("PUT", "/consumers/u5", {"username": "u5", "plugins": {"key-auth": {"key": "new-%d" % j}}})
        t1 = time.time()
        while get(gw.port, "/k", headers=[("apikey", "new-%d" % j)]).status != 200:
            time.sleep(0.002)
        print("LIVE", r.status, t1 - t0, time.time() - t0)
    print("\n".join([l for l in gw.log_text().splitlines() if "published" in l][-4:]))
