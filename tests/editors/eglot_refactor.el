;;; eglot_refactor.el --- Emacs eglot with no ollie package: `Ollie: Refactor...' runs a turn, its edit lands.  -*- lexical-binding: t -*-
;; Run by tests/editors/test_eglot.py: emacs --batch -l this-file, in the workspace.
(require 'eglot)
(require 'json)
(setq eglot-confirm-server-initiated-edits nil
      jsonrpc-default-request-timeout 60
      ;; Wait for the daemon's initialize answer (eglot's default gives up after 3 s and goes on in the background,
      ;; so a loaded machine's slower start failed the test).
      eglot-sync-connect t
      eglot-connect-timeout 120
      eglot-server-programs
      `((python-mode . ,(append (json-read-from-string (getenv "OLLIE_TEST_SERVER_CMD")) nil))))
(defun ollie-test-finish (result)
  (with-temp-file (getenv "OLLIE_TEST_OUT") (insert (json-encode result)))
  (kill-emacs 0))
(condition-case err
    (progn
      (find-file "code.py")
      (python-mode)
      (call-interactively #'eglot)
      (let ((server (eglot-current-server)))
        (unless server (error "eglot did not connect"))
        (let* ((actions (eglot-code-actions (point-min) (point-max) "refactor"))
               (titles (mapcar (lambda (a) (plist-get a :title)) actions))
               (refactor (seq-find (lambda (a) (equal (plist-get a :title) "Ollie: Refactor...")) actions))
               (command (plist-get refactor :command)))
          (eglot-execute-command server (plist-get command :command) (plist-get command :arguments))
          (ollie-test-finish `((titles . ,(vconcat titles))
                               (buffer . ,(buffer-substring-no-properties (point-min) (point-max)))
                               (modified . ,(if (buffer-modified-p) t :json-false)))))))
  (error (ollie-test-finish `((failure . ,(format "%S" err))))))
