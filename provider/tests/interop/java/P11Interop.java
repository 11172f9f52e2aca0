// Interop with Java's SunPKCS11 provider: every result the token produces is
// checked by the JDK's own providers (SunEC, SunRsaSign, SunJCE, SUN).
//
// Usage: java P11Interop CONFIG PIN            run every case
//        java P11Interop CONFIG PIN login      only log in (exit 0 on success)
//
// Prints one line per case, "ok NAME" or "FAIL NAME: reason", and exits
// non-zero when any case failed. java.sh turns the lines into lib.sh checks.

import java.nio.charset.StandardCharsets;
import java.security.*;
import java.security.interfaces.*;
import java.security.spec.*;
import java.util.*;
import javax.crypto.*;
import javax.crypto.spec.*;

public class P11Interop {
    interface Case { void run() throws Exception; }

    static int failures = 0;

    static void check(String name, Case c) {
        if (name.contains(": ")) throw new IllegalArgumentException("case names must not contain ': '");
        try {
            c.run();
            System.out.println("ok " + name);
        } catch (Throwable t) {
            failures++;
            StringBuilder why = new StringBuilder(String.valueOf(t));
            for (Throwable cause = t.getCause(); cause != null; cause = cause.getCause()) {
                why.append(" <- ").append(cause);
            }
            System.out.println("FAIL " + name + ": " + why.toString().replace('\n', ' '));
            if (System.getenv("P11_INTEROP_TRACE") != null) t.printStackTrace(System.out);
        }
    }

    /** A key an earlier case made; fails this case plainly if that one broke. */
    static <T> T need(T value, String what) {
        if (value == null) throw new IllegalStateException("no " + what + " (an earlier case failed)");
        return value;
    }

    static KeyPair ec256() { return need(ec256, "EC P-256 key pair"); }
    static KeyPair rsa() { return need(rsa, "RSA key pair"); }
    static byte[] ecSig() { return need(ecSig, "ECDSA signature"); }
    static byte[] rsaSig() { return need(rsaSig, "RSA signature"); }
    static SecretKey aesToken() { return need(aesToken, "token AES key"); }

    static void expect(boolean cond, String what) {
        if (!cond) throw new AssertionError(what);
    }

    /** Runs c, which must throw an exception of type want. */
    static void expectThrows(Class<? extends Throwable> want, Case c) throws Exception {
        try {
            c.run();
        } catch (Throwable t) {
            if (want.isInstance(t)) return;
            throw new AssertionError("expected " + want.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError("expected " + want.getSimpleName() + ", nothing was thrown");
    }

    static Provider p11;
    static KeyStore ks;
    static final SecureRandom rng = new SecureRandom();
    static final byte[] MSG = "interop message from SunPKCS11 ".repeat(40).getBytes(StandardCharsets.UTF_8);
    static final byte[] OTHER = "another message".getBytes(StandardCharsets.UTF_8);

    static byte[] random(int n) {
        byte[] b = new byte[n];
        rng.nextBytes(b);
        return b;
    }

    // Shared between cases (a later case is skipped-as-failed if an earlier one broke).
    static KeyPair ec256, ec384, rsa;
    static byte[] ecSig, rsaSig;
    static SecretKey aesToken;

    public static void main(String[] args) throws Exception {
        String config = args[0];
        char[] pin = args[1].toCharArray();
        Provider base = Security.getProvider("SunPKCS11");
        p11 = base.configure(config);
        Security.addProvider(p11);

        if (args.length > 2 && args[2].equals("login")) {
            KeyStore k = KeyStore.getInstance("PKCS11", p11);
            k.load(null, pin);
            System.out.println("logged in to " + p11.getName());
            return;
        }

        check("provider " + p11.getName() + " loads the module", () ->
            expect(p11.getService("Signature", "SHA256withECDSA") != null,
                   "no SHA256withECDSA service; services: " + p11.getServices().size()));

        check("KeyStore PKCS11 load (C_Login) with the PIN", () -> {
            ks = KeyStore.getInstance("PKCS11", p11);
            ks.load(null, pin);
            expect(ks.size() >= 0, "size");
        });

        // ---- EC P-256 / P-384 ------------------------------------------------
        check("KeyPairGenerator EC secp256r1 on the token", () -> {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC", p11);
            g.initialize(new ECGenParameterSpec("secp256r1"));
            ec256 = g.generateKeyPair();
            ECPublicKey pub = (ECPublicKey) ec256.getPublic();
            expect(pub.getParams().getCurve().getField().getFieldSize() == 256, "not a 256-bit curve");
            expect(ec256.getPrivate().getEncoded() == null, "private key value was exported");
        });
        check("SHA256withECDSA sign on the token", () -> {
            Signature s = Signature.getInstance("SHA256withECDSA", p11);
            s.initSign(ec256().getPrivate());
            s.update(MSG);
            ecSig = s.sign();
        });
        check("SunEC verifies the token's SHA256withECDSA signature", () ->
            expect(verify("SHA256withECDSA", "SunEC", jdkPublic("EC", ec256().getPublic()), MSG, ecSig()),
                   "SunEC rejected the signature"));
        check("SunEC rejects that signature for another message", () ->
            expect(!verify("SHA256withECDSA", "SunEC", jdkPublic("EC", ec256().getPublic()), OTHER, ecSig()),
                   "SunEC accepted a signature over another message"));
        check("the token verifies its SHA256withECDSA signature", () -> {
            expect(verify("SHA256withECDSA", p11, ec256().getPublic(), MSG, ecSig()), "token rejected its own signature");
            expect(!verify("SHA256withECDSA", p11, ec256().getPublic(), OTHER, ecSig()), "token accepted another message");
        });
        check("the token verifies a SunEC SHA256withECDSA signature (imported public key)", () -> {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC", "SunEC");
            g.initialize(new ECGenParameterSpec("secp256r1"));
            KeyPair jdk = g.generateKeyPair();
            Signature s = Signature.getInstance("SHA256withECDSA", "SunEC");
            s.initSign(jdk.getPrivate());
            s.update(MSG);
            byte[] sig = s.sign();
            expect(verify("SHA256withECDSA", p11, jdk.getPublic(), MSG, sig), "token rejected a SunEC signature");
        });
        check("EC secp384r1 keygen + SHA384withECDSA on the token, SunEC verifies", () -> {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC", p11);
            g.initialize(new ECGenParameterSpec("secp384r1"));
            ec384 = g.generateKeyPair();
            Signature s = Signature.getInstance("SHA384withECDSA", p11);
            s.initSign(ec384.getPrivate());
            s.update(MSG);
            byte[] sig = s.sign();
            expect(verify("SHA384withECDSA", "SunEC", jdkPublic("EC", ec384.getPublic()), MSG, sig), "SunEC rejected it");
        });
        check("EC secp521r1 keygen + SHA512withECDSA on the token, SunEC verifies", () -> {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC", p11);
            g.initialize(new ECGenParameterSpec("secp521r1"));
            KeyPair ec521 = g.generateKeyPair();
            ECPublicKey pub = (ECPublicKey) ec521.getPublic();
            expect(pub.getParams().getCurve().getField().getFieldSize() == 521, "not a 521-bit curve");
            Signature s = Signature.getInstance("SHA512withECDSA", p11);
            s.initSign(ec521.getPrivate());
            s.update(MSG);
            byte[] sig = s.sign();
            PublicKey jdk = jdkPublic("EC", pub);
            expect(verify("SHA512withECDSA", "SunEC", jdk, MSG, sig), "SunEC rejected it");
            expect(!verify("SHA512withECDSA", "SunEC", jdk, OTHER, sig), "SunEC accepted another message");
        });
        check("ECDH KeyAgreement on the token equals SunEC's", () -> {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC", "SunEC");
            g.initialize(new ECGenParameterSpec("secp256r1"));
            KeyPair peer = g.generateKeyPair();
            KeyAgreement ka = KeyAgreement.getInstance("ECDH", p11);
            ka.init(ec256().getPrivate());
            ka.doPhase(peer.getPublic(), true);
            byte[] ours = ka.generateSecret();
            KeyAgreement jka = KeyAgreement.getInstance("ECDH", "SunEC");
            jka.init(peer.getPrivate());
            jka.doPhase(jdkPublic("EC", ec256().getPublic()), true);
            byte[] theirs = jka.generateSecret();
            expect(Arrays.equals(ours, theirs), "shared secrets differ");
        });

        // ---- RSA-2048 --------------------------------------------------------
        check("KeyPairGenerator RSA 2048 on the token", () -> {
            KeyPairGenerator g = KeyPairGenerator.getInstance("RSA", p11);
            g.initialize(2048);
            rsa = g.generateKeyPair();
            RSAPublicKey pub = (RSAPublicKey) rsa.getPublic();
            expect(pub.getModulus().bitLength() == 2048, "modulus is " + pub.getModulus().bitLength() + " bits");
            expect(pub.getPublicExponent().intValue() == 65537, "public exponent " + pub.getPublicExponent());
            expect(rsa.getPrivate().getEncoded() == null, "private key value was exported");
        });
        check("SHA256withRSA sign on the token", () -> {
            Signature s = Signature.getInstance("SHA256withRSA", p11);
            s.initSign(rsa().getPrivate());
            s.update(MSG);
            rsaSig = s.sign();
            expect(rsaSig.length == 256, "signature is " + rsaSig.length + " bytes");
        });
        check("SunRsaSign verifies the token's SHA256withRSA signature", () ->
            expect(verify("SHA256withRSA", "SunRsaSign", jdkPublic("RSA", rsa().getPublic()), MSG, rsaSig()),
                   "SunRsaSign rejected the signature"));
        check("SunRsaSign rejects that signature for another message", () ->
            expect(!verify("SHA256withRSA", "SunRsaSign", jdkPublic("RSA", rsa().getPublic()), OTHER, rsaSig()),
                   "SunRsaSign accepted a signature over another message"));
        check("the token verifies its SHA256withRSA signature", () -> {
            expect(verify("SHA256withRSA", p11, rsa().getPublic(), MSG, rsaSig()), "token rejected its own signature");
            expect(!verify("SHA256withRSA", p11, rsa().getPublic(), OTHER, rsaSig()), "token accepted another message");
        });
        check("RSASSA-PSS (SHA-256, MGF1, salt 32) on the token, SunRsaSign verifies", () -> {
            PSSParameterSpec pss = new PSSParameterSpec("SHA-256", "MGF1", MGF1ParameterSpec.SHA256, 32, 1);
            Signature s = Signature.getInstance("RSASSA-PSS", p11);
            s.setParameter(pss);
            s.initSign(rsa().getPrivate());
            s.update(MSG);
            byte[] sig = s.sign();
            Signature v = Signature.getInstance("RSASSA-PSS", "SunRsaSign");
            v.setParameter(pss);
            v.initVerify(jdkPublic("RSA", rsa().getPublic()));
            v.update(MSG);
            expect(v.verify(sig), "SunRsaSign rejected the PSS signature");
        });
        check("RSA/ECB/PKCS1Padding, SunJCE encrypts and the token decrypts", () -> {
            byte[] secret = random(48);
            Cipher enc = Cipher.getInstance("RSA/ECB/PKCS1Padding", "SunJCE");
            enc.init(Cipher.ENCRYPT_MODE, jdkPublic("RSA", rsa().getPublic()));
            byte[] ct = enc.doFinal(secret);
            Cipher dec = Cipher.getInstance("RSA/ECB/PKCS1Padding", p11);
            dec.init(Cipher.DECRYPT_MODE, rsa().getPrivate());
            expect(Arrays.equals(dec.doFinal(ct), secret), "plaintext differs");
        });

        // ---- AES -------------------------------------------------------------
        byte[] aad = "header".getBytes(StandardCharsets.UTF_8);
        check("KeyGenerator AES 256 on the token (sensitive, not extractable)", () -> {
            KeyGenerator g = KeyGenerator.getInstance("AES", p11);
            g.init(256);
            aesToken = g.generateKey();
            expect(aesToken.getAlgorithm().equals("AES"), "algorithm " + aesToken.getAlgorithm());
            expect(aesToken.getEncoded() == null, "the key value was exported");
        });
        check("AES/GCM/NoPadding round trip on the token, tampering detected", () -> {
            GCMParameterSpec spec = new GCMParameterSpec(128, random(12));
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding", p11);
            c.init(Cipher.ENCRYPT_MODE, aesToken(), spec);
            c.updateAAD(aad);
            byte[] ct = c.doFinal(MSG);
            expect(ct.length == MSG.length + 16, "ciphertext length " + ct.length);
            Cipher d = Cipher.getInstance("AES/GCM/NoPadding", p11);
            d.init(Cipher.DECRYPT_MODE, aesToken(), spec);
            d.updateAAD(aad);
            expect(Arrays.equals(d.doFinal(ct), MSG), "plaintext differs");
            ct[5] ^= 1;
            d.init(Cipher.DECRYPT_MODE, aesToken(), spec);
            d.updateAAD(aad);
            expectThrows(AEADBadTagException.class, () -> d.doFinal(ct));
        });
        // A key the JDK knows (SunPKCS11 imports it as a session object), so
        // ciphertexts can be compared with SunJCE's in both directions.
        SecretKeySpec shared = new SecretKeySpec(random(32), "AES");
        check("AES/GCM/NoPadding, the token encrypts and SunJCE decrypts (same key)", () -> {
            GCMParameterSpec spec = new GCMParameterSpec(128, random(12));
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding", p11);
            c.init(Cipher.ENCRYPT_MODE, shared, spec);
            c.updateAAD(aad);
            byte[] ct = c.doFinal(MSG);
            Cipher d = Cipher.getInstance("AES/GCM/NoPadding", "SunJCE");
            d.init(Cipher.DECRYPT_MODE, shared, spec);
            d.updateAAD(aad);
            expect(Arrays.equals(d.doFinal(ct), MSG), "plaintext differs");
        });
        check("AES/GCM/NoPadding, SunJCE encrypts and the token decrypts, tampered AAD rejected", () -> {
            GCMParameterSpec spec = new GCMParameterSpec(128, random(12));
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding", "SunJCE");
            c.init(Cipher.ENCRYPT_MODE, shared, spec);
            c.updateAAD(aad);
            byte[] ct = c.doFinal(MSG);
            Cipher d = Cipher.getInstance("AES/GCM/NoPadding", p11);
            d.init(Cipher.DECRYPT_MODE, shared, spec);
            d.updateAAD(aad);
            expect(Arrays.equals(d.doFinal(ct), MSG), "plaintext differs");
            d.init(Cipher.DECRYPT_MODE, shared, spec);
            d.updateAAD("HEADER".getBytes(StandardCharsets.UTF_8));
            expectThrows(AEADBadTagException.class, () -> d.doFinal(ct));
        });
        check("AES/CBC/PKCS5Padding on the token equals SunJCE byte for byte", () -> {
            IvParameterSpec iv = new IvParameterSpec(random(16));
            byte[] data = Arrays.copyOf(MSG, 1001);
            Cipher c = Cipher.getInstance("AES/CBC/PKCS5Padding", p11);
            c.init(Cipher.ENCRYPT_MODE, shared, iv);
            byte[] ours = c.doFinal(data);
            Cipher j = Cipher.getInstance("AES/CBC/PKCS5Padding", "SunJCE");
            j.init(Cipher.ENCRYPT_MODE, shared, iv);
            expect(Arrays.equals(ours, j.doFinal(data)), "ciphertexts differ");
            Cipher d = Cipher.getInstance("AES/CBC/PKCS5Padding", p11);
            d.init(Cipher.DECRYPT_MODE, shared, iv);
            expect(Arrays.equals(d.doFinal(ours), data), "plaintext differs");
        });
        check("AES/CTR/NoPadding on the token equals SunJCE", () -> {
            IvParameterSpec iv = new IvParameterSpec(random(16));
            byte[] data = Arrays.copyOf(MSG, 777);
            Cipher c = Cipher.getInstance("AES/CTR/NoPadding", p11);
            c.init(Cipher.ENCRYPT_MODE, shared, iv);
            byte[] ours = c.doFinal(data);
            Cipher j = Cipher.getInstance("AES/CTR/NoPadding", "SunJCE");
            j.init(Cipher.ENCRYPT_MODE, shared, iv);
            expect(Arrays.equals(ours, j.doFinal(data)), "ciphertexts differ");
        });

        // ---- digests, HMAC, random --------------------------------------------
        for (String alg : new String[] {"SHA-256", "SHA-384", "SHA-512", "SHA-1"}) {
            check("MessageDigest " + alg + " on the token equals SUN's", () -> {
                byte[] data = random(100_000);
                MessageDigest md = MessageDigest.getInstance(alg, p11);
                md.update(data, 0, 4_000);
                md.update(data, 4_000, data.length - 4_000);
                byte[] ours = md.digest();
                byte[] theirs = MessageDigest.getInstance(alg, "SUN").digest(data);
                expect(Arrays.equals(ours, theirs), "digests differ");
            });
        }
        check("Mac HmacSHA256 on the token equals SunJCE's", () -> {
            SecretKeySpec k = new SecretKeySpec(random(32), "HmacSHA256");
            Mac m = Mac.getInstance("HmacSHA256", p11);
            m.init(k);
            byte[] ours = m.doFinal(MSG);
            Mac j = Mac.getInstance("HmacSHA256", "SunJCE");
            j.init(k);
            expect(Arrays.equals(ours, j.doFinal(MSG)), "MACs differ");
        });
        // SunPKCS11 generates HmacSHA256 keys with CKM_SHA256_KEY_GEN when the
        // token lists it (a CKK_SHA256_HMAC key: only the CKK_SHA256_HMAC
        // template in java.sh makes its value readable here).
        check("KeyGenerator HmacSHA256 on the token, its Mac equals SunJCE's over the key value", () -> {
            KeyGenerator g = KeyGenerator.getInstance("HmacSHA256", p11);
            g.init(256);
            SecretKey k = g.generateKey();
            byte[] value = k.getEncoded(); // readable thanks to the template in java.sh
            expect(value != null && value.length == 32, "no 32-byte key value");
            Mac m = Mac.getInstance("HmacSHA256", p11);
            m.init(k);
            Mac j = Mac.getInstance("HmacSHA256", "SunJCE");
            j.init(new SecretKeySpec(value, "HmacSHA256"));
            expect(Arrays.equals(m.doFinal(MSG), j.doFinal(MSG)), "MACs differ");
        });
        check("SecureRandom PKCS11 returns fresh bytes", () -> {
            SecureRandom r = SecureRandom.getInstance("PKCS11", p11);
            byte[] a = new byte[64], b = new byte[64];
            r.nextBytes(a);
            r.nextBytes(b);
            expect(!Arrays.equals(a, b) && !Arrays.equals(a, new byte[64]), "repeated or zero output");
        });

        // ---- KeyStore: a token object ----------------------------------------
        check("KeyStore stores an AES key as a token object and finds it again", () -> {
            ks.setEntry("java-aes", new KeyStore.SecretKeyEntry(aesToken()), null);
            KeyStore again = KeyStore.getInstance("PKCS11", p11);
            again.load(null, pin);
            expect(Collections.list(again.aliases()).contains("java-aes"), "aliases: " + Collections.list(again.aliases()));
            expect(again.isKeyEntry("java-aes"), "not a key entry");
            SecretKey k = (SecretKey) again.getKey("java-aes", null);
            GCMParameterSpec spec = new GCMParameterSpec(128, random(12));
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding", p11);
            c.init(Cipher.ENCRYPT_MODE, k, spec);
            byte[] ct = c.doFinal(MSG);
            c.init(Cipher.DECRYPT_MODE, aesToken(), spec);
            expect(Arrays.equals(c.doFinal(ct), MSG), "the stored key is not the generated one");
        });
        check("KeyStore deletes the entry", () -> {
            ks.deleteEntry("java-aes");
            KeyStore again = KeyStore.getInstance("PKCS11", p11);
            again.load(null, pin);
            expect(!again.containsAlias("java-aes"), "still there");
        });

        System.exit(failures == 0 ? 0 : 1);
    }

    /** The same public key as a JDK (non-PKCS#11) key, via its X.509 encoding. */
    static PublicKey jdkPublic(String alg, PublicKey k) throws Exception {
        byte[] der = k.getEncoded();
        if (der == null) throw new AssertionError("public key has no encoding");
        String prov = alg.equals("EC") ? "SunEC" : "SunRsaSign";
        return KeyFactory.getInstance(alg, prov).generatePublic(new X509EncodedKeySpec(der));
    }

    static boolean verify(String alg, Object provider, PublicKey k, byte[] data, byte[] sig) throws Exception {
        Signature v = provider instanceof Provider
            ? Signature.getInstance(alg, (Provider) provider)
            : Signature.getInstance(alg, (String) provider);
        v.initVerify(k);
        v.update(data);
        try {
            return v.verify(sig);
        } catch (SignatureException e) {
            return false;
        }
    }
}
