// A TLS 1.2 client on JSSE whose PRF work (master secret, key block,
// Finished) is done by the token through SunPKCS11; run by ../java-tls.sh
// against `openssl s_server -rev`. Prints "ok NAME" or "FAIL NAME: reason"
// per check and exits 1 if any failed.
//
// Usage: java --add-exports java.base/sun.security.internal.spec=ALL-UNNAMED \
//          TlsClient CONFIG PIN TRUSTSTORE PORT SUITE EXPECT
// EXPECT is "pass" (handshake and echo must work) or "fail" (the handshake
// must fail; the script checks the token's reason in its log).
//
// The JVM must run with -Djdk.tls.useExtendedMasterSecret=false (SunPKCS11
// has no extended master secret; SunJCE's needs the pre-master's value) and
// -Djdk.tls.namedGroups=secp256r1 (JDK 17's SunPKCS11 has no X25519), as
// docs/consumers.md explains.

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.Provider;
import java.security.Security;
import java.security.spec.ECGenParameterSpec;
import javax.crypto.KeyAgreement;
import javax.crypto.KeyGenerator;
import javax.crypto.SecretKey;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import sun.security.internal.spec.TlsMasterSecretParameterSpec;

public class TlsClient {
    static int failed = 0;

    interface Check {
        void run() throws Exception;
    }

    static void check(String name, Check c) {
        try {
            c.run();
            System.out.println("ok " + name);
        } catch (Throwable t) {
            failed++;
            String why = String.valueOf(t).replace('\n', ' ');
            for (Throwable cause = t.getCause(); cause != null; cause = cause.getCause()) {
                why += " <- " + String.valueOf(cause).replace('\n', ' ');
            }
            System.out.println("FAIL " + name + ": " + why);
            if (System.getenv("P11_INTEROP_TRACE") != null) {
                t.printStackTrace(System.out);
            }
        }
    }

    static void require(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) throws Exception {
        String config = args[0];
        char[] pin = args[1].toCharArray();
        String truststore = args[2];
        int port = Integer.parseInt(args[3]);
        String suite = args[4];
        boolean expectPass = args[5].equals("pass");

        Provider p11 = Security.getProvider("SunPKCS11").configure(config);
        // First in the provider order: JSSE names no provider, so the order
        // decides which one does the TLS PRF work.
        Security.insertProviderAt(p11, 1);
        KeyStore.getInstance("PKCS11", p11).load(null, pin); // C_Login

        for (String alg : new String[] {
                "SunTls12MasterSecret", "SunTls12KeyMaterial", "SunTls12Prf"}) {
            check("KeyGenerator " + alg + " comes from " + p11.getName(), () -> {
                String got = KeyGenerator.getInstance(alg).getProvider().getName();
                require(got.equals(p11.getName()), "provider " + got);
            });
        }

        // No software fallback: the pre-master the token derives for ECDHE
        // is sensitive, so SunJCE (next in line if SunPKCS11 refused) cannot
        // make a master secret from it.
        check("the ECDH pre-master is sensitive and SunJCE refuses it", () -> {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC", p11);
            g.initialize(new ECGenParameterSpec("secp256r1"));
            KeyPair a = g.generateKeyPair();
            KeyPair b = g.generateKeyPair();
            KeyAgreement ka = KeyAgreement.getInstance("ECDH", p11);
            ka.init(a.getPrivate());
            ka.doPhase(b.getPublic(), true);
            SecretKey pms = ka.generateSecret("TlsPremasterSecret");
            System.out.println("pre-master: " + pms);
            require(pms.getEncoded() == null, "the pre-master's value is readable");
            require(pms.toString().contains(", sensitive"), "the pre-master is not sensitive");
            byte[] random = new byte[32];
            KeyGenerator soft = KeyGenerator.getInstance("SunTls12MasterSecret", "SunJCE");
            try {
                soft.init(new TlsMasterSecretParameterSpec(
                        pms, 3, 3, random, random, "SHA-256", 32, 64));
                soft.generateKey();
            } catch (Exception refused) {
                return;
            }
            throw new AssertionError("SunJCE made a master secret from the token's pre-master");
        });

        Check handshake = () -> {
            KeyStore trust = KeyStore.getInstance("PKCS12");
            try (FileInputStream in = new FileInputStream(truststore)) {
                trust.load(in, "changeit".toCharArray());
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
            tmf.init(trust);
            SSLContext ctx = SSLContext.getInstance("TLSv1.2");
            ctx.init(null, tmf.getTrustManagers(), null);
            try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket("127.0.0.1", port)) {
                s.setSoTimeout(30000);
                s.setEnabledProtocols(new String[] {"TLSv1.2"});
                s.setEnabledCipherSuites(new String[] {suite});
                s.startHandshake();
                String negotiated = s.getSession().getCipherSuite();
                System.out.println("negotiated " + s.getSession().getProtocol() + " " + negotiated);
                require(negotiated.equals(suite), "negotiated " + negotiated);
                String line = "dalek-pkcs11 tls " + suite;
                OutputStream out = s.getOutputStream();
                out.write((line + "\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                BufferedReader in = new BufferedReader(
                        new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
                String back = in.readLine();
                String want = new StringBuilder(line).reverse().toString();
                require(want.equals(back), "s_server -rev answered " + back);
            }
        };
        if (expectPass) {
            check("TLS 1.2 " + suite + " handshake and echo through the token", handshake);
        } else {
            check("TLS 1.2 " + suite + " handshake fails", () -> {
                try {
                    handshake.run();
                } catch (Exception expected) {
                    System.out.println("handshake failed as expected: " + expected);
                    return;
                }
                throw new AssertionError("the handshake succeeded");
            });
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
