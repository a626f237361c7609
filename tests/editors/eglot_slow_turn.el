;;; eglot_slow_turn.el --- Emacs eglot, a user's own settings: `Ollie: Explain' on a turn slower than eglot waits.  -*- lexical-binding: t -*-
;; Run by tests/editors/test_eglot.py: emacs --batch -l this-file, in the workspace. eglot waits for
;; workspace/executeCommand with Emacs frozen and gives up after `jsonrpc-default-request-timeout' (10 s): kept.
(require 'eglot)
(require 'json)
(setq eglot-sync-connect t
      eglot-connect-timeout 120
      eglot-server-programs
      `((python-mode . ,(append (json-read-from-string (getenv "OLLIE_TEST_SERVER_CMD")) nil))))
(defvar ollie-test-messages nil "The messages eglot showed, newest first.")
(advice-add 'eglot--message :before (lambda (format &rest args) (push (apply #'format format args) ollie-test-messages)))
(defun ollie-test-finish (result)
  (with-temp-file (getenv "OLLIE_TEST_OUT") (insert (json-encode result)))
  (kill-emacs 0))
(defun ollie-test-answered ()
  (seq-find (lambda (m) (string-search "ollie: It adds" m)) ollie-test-messages))
(condition-case err
    (progn
      (find-file "code.py")
      (python-mode)
      (call-interactively #'eglot)
      (let* ((server (or (eglot-current-server) (error "eglot did not connect")))
             (actions (eglot-code-actions (point-min) (point-max) "refactor"))
             (explain (seq-find (lambda (a) (equal (plist-get a :title) "Ollie: Explain")) actions))
             (command (plist-get explain :command))
             (started (float-time))
             (answer (condition-case e
                         (eglot-execute-command server (plist-get command :command) (plist-get command :arguments))
                       (error (format "%S" e))))
             (waited (- (float-time) started)))
        ;; The turn's answer comes later, as a message: wait for it (the daemon's output), a minute at most.
        (while (and (not (ollie-test-answered)) (< (- (float-time) started) 60))
          (accept-process-output nil 1))
        (ollie-test-finish `((answer . ,(if (stringp answer) answer (json-encode answer)))
                             (waited . ,waited)
                             (messages . ,(vconcat (reverse ollie-test-messages)))))))
  (error (ollie-test-finish `((failure . ,(format "%S" err))))))
